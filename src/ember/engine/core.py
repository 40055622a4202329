"""The single-pass engine: validate, replay and measure a record as it streams.

``EpisodeEngine`` is the sink of the record reader: it receives the record's
parts (header, initial state, each step, final state) in record order,
builds each transition (s_{t-1}, step_t, s_t) and hands it to the stage-2
checks, the replay check and the metric accumulators, in that order.
Memory holds one step and the per-person / per-cell state, never the
record.
"""

from ..checks.replay import ReplayCheck
from ..checks.shape import check_final_shape, check_step, fail
from ..checks.stage1 import check_compatibility
from ..checks.stage2 import check_final_matches_last, check_initial_state, replayed_step_checks, step_checks
from ..errors import MetricsInputError, ScenarioError
from ..metrics.exposure import FireExposure
from ..metrics.movement import MovementCounts
from ..metrics.replanning import ReplanningCounts
from ..metrics.report import build_report
from ..metrics.resolutions import Resolutions
from ..record.sinks import RecordSink
from ..scenario import compile_scenario
from ..sim.simulator import marked_cells
from ..transition import State, Transition, decode_snapshot

REPLAY_PREFIX = "record failed simulator replay verification: "


class EpisodeEngine(RecordSink):
    """Record parts in, episode metrics out (or a MetricsInputError).

    A sink of the record reader (``header``, ``initial_state``, ``step``,
    ``final_state``, ``end``), and ``take_line`` for the canonical-line front
    end.  ``on_state(t, snapshot)``, when given, sees s_0 and then each s_t
    once its transition has passed the checks (the pictures of ``render``).
    """

    def __init__(self, scenario, replay=True, on_state=None, simulator_steps_only=False):
        self.scenario = scenario
        self.replay_enabled = replay  # False: stages 1-2 and metrics alone (benchmarks, measure_run)
        # True for measure_run: every step is the simulator's own, so no strict
        # step can follow and even the stateful checks have nothing to keep.
        self.simulator_steps_only = simulator_steps_only
        self.on_state = on_state
        self.header_value = self.initial = self.final_value = self.prev = None
        self.steps = 0
        self.checks = self.replayed_checks = ()
        self.replay = self.burning = None
        self.result = None  # the EpisodeMetrics, once the record has ended and passed

    # -- reader sink ----------------------------------------------------------

    def header(self, value):
        check_compatibility(value, self.scenario)
        self.header_value = value
        self._open()

    def initial_state(self, value):
        state = decode_snapshot(value, "$.initial_state", self.scenario)
        check_initial_state(state, self.scenario)
        self.initial = state
        self._open()

    def final_state(self, value):
        check_final_shape(value, "$.final_state", self.scenario)
        self.final_value = value

    def step(self, index, value):
        path = f"$.steps[{index}]"
        status, position, ignited = check_step(value, path, self.scenario)
        if self.prev is not None and self.prev.burning is None:
            self._fill_burning(self.prev)
        self.update(
            Transition(
                index + 1, path, self.prev, value, State(value["snapshot"], status, position), self.burning, ignited
            )
        )

    def end(self):
        """The reader's explicit end-of-stream event: finish once, keep the result."""
        self.result = self.finish()

    def _fill_burning(self, state):
        """Give a replayed state the burning list its replay left out (``ReplayCheck``): the cells
        of the engine's mask, which holds burning(s_{t-1}) until the transition is measured."""
        cols = self.scenario.grid.cols
        state.burning = state.raw["burning"] = [[cell // cols, cell % cols] for cell in marked_cells(self.burning)]

    # -- replayed steps ---------------------------------------------------------

    def take_line(self, index, line):
        """The front end's question: take step ``index`` from its canonical ``line``?

        The replay check tries the line; when it is the replay's own step,
        the engine turns that step into a transition and says True.
        """
        if self.replay is None or index != self.steps or self.prev.terminated:
            return False
        replayed = self.replay.try_line(line)
        if replayed is None:
            return False
        self.replayed_step(replayed)
        return True

    def replayed_step(self, replayed):
        """Measure the next step from the simulator's own ``ReplayedStep`` (already byte-exact)."""
        step = replayed.step
        t = self.steps + 1
        cur = State(step["snapshot"], replayed.status, replayed.position, replayed.active)
        cols = self.scenario.grid.cols
        ignited = [row * cols + col for row, col in step["ignitions"]]
        self.update(Transition(t, f"$.steps[{t - 1}]", self.prev, step, cur, self.burning, ignited, replayed=True))

    # -- the pipeline ---------------------------------------------------------

    def _open(self):
        """Both header and s_0 are in: build every accumulator."""
        if self.header_value is None or self.initial is None:
            return
        sc, s0 = self.scenario, self.initial
        self.checks = () if self.simulator_steps_only else step_checks(sc, s0)
        self.replayed_checks = replayed_step_checks(self.checks)
        # The checks and metrics never read a replayed state's burning list (a strict step reads
        # its predecessor's, which ``step`` fills in); ``on_state`` gets whole snapshots.
        lists = self.on_state is not None
        self.replay = ReplayCheck(sc, self.header_value, s0.raw, burning_lists=lists) if self.replay_enabled else None
        self.resolutions = Resolutions(sc)
        self.movement = MovementCounts(sc)
        self.replanning = ReplanningCounts(sc)
        self.exposure = FireExposure(sc, s0)
        self.metrics = (self.resolutions, self.movement, self.replanning, self.exposure)
        self.burning = bytearray(sc.grid.size)
        for cell in sc.ignitions:
            self.burning[cell] = 1
        self.prev = s0
        if self.on_state is not None:
            self.on_state(0, s0.raw)

    def update(self, tr):
        """One transition to every check, the replay check and every metric, in that order.

        A replayed step is the simulator's own: the stage-2 rules hold by
        construction, so only the checks that keep state see it.
        """
        for check in self.replayed_checks if tr.replayed else self.checks:
            check.update(tr)
        if self.replay is not None:
            self.replay.update(tr)
        if self.replay is None or self.replay.mismatch is None:
            # A record that failed replay gets no result: stop measuring it
            # (the checks go on, for the precedence rule of simulator.md §7).
            for accumulator in self.metrics:
                accumulator.update(tr)
        for cell in tr.ignited:
            self.burning[cell] = 1
        self.prev = tr.cur
        self.steps = tr.t
        if self.on_state is not None:
            self.on_state(tr.t, tr.cur.raw)

    def finish(self):
        """Termination checks, then the replay verdict, then the report."""
        if self.steps == 0:
            fail("$.steps", "the record has no steps; metrics need a complete episode.")
        last = self.prev
        if not last.terminated:
            fail(
                f"$.steps[{self.steps - 1}].snapshot.terminated",
                f"the record ends at step {self.steps} without termination; metrics need a complete episode.",
            )
        check_final_matches_last(self.final_value, last, self.scenario)
        if self.replay is not None:
            self.replay.finish(self.final_value, self.steps)
            mismatch = self.replay.result()
            if mismatch is not None:
                raise MetricsInputError(REPLAY_PREFIX + str(mismatch)) from mismatch
        return build_report(
            self.scenario,
            self.header_value,
            last,
            self.steps,
            self.resolutions,
            self.movement,
            self.replanning,
            self.exposure,
        )


def compile_checked(scenario):
    """``scenario`` compiled; an invalid one is a ``MetricsInputError`` (what a reader of records raises)."""
    try:
        return compile_scenario(scenario)
    except ScenarioError as exc:
        raise MetricsInputError(f"invalid scenario: {exc}") from exc
