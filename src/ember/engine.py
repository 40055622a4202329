"""The single-pass engine: validate, replay and measure a record as it streams.

``EpisodeEngine`` is the sink of the record reader: it receives the record's
parts (header, initial state, each step, final state) in record order,
builds each transition (s_{t-1}, step_t, s_t) and hands it to the stage-2
checks, the replay check and the metric accumulators, in that order.
Memory holds one step and the per-person / per-cell state, never the
record.  ``episode_metrics`` (pull) and ``MetricsStream`` (push) differ only
in how bytes reach the same reader and engine.
"""

import json

from .canonical import canonical_json
from .checks.replay import ReplayCheck, Replayer
from .checks.shape import check_final_state as check_final_shape
from .checks.shape import check_step, fail
from .checks.stage1 import check_compatibility
from .checks.stage2 import check_final_state, check_initial_state, replayed_step_checks, step_checks
from .errors import ActionError, MetricsInputError, ReplayMismatchError, ScenarioError
from .metrics.exposure import FireExposure
from .metrics.movement import MovementCounts
from .metrics.replanning import ReplanningCounts
from .metrics.report import build_report
from .metrics.resolutions import Resolutions
from .record.frontend import CanonicalLines
from .record.reader import DEFAULT_LIMITS, Limits, RecordParser
from .record.source import iter_chunks
from .scenario import compile_scenario
from .transition import State, Transition, decode_snapshot

REPLAY_PREFIX = "record failed simulator replay verification: "


class EpisodeEngine:
    """Record parts in, episode metrics out (or a MetricsInputError)."""

    def __init__(self, scenario, replay=True):
        self.scenario = scenario
        self.replay_enabled = replay  # False only for benchmarks: stages 1-2 and metrics alone
        self.header_value = None
        self.initial = None
        self.final_value = None
        self.prev = None
        self.steps = 0
        self.checks = ()
        self.replayed_checks = ()
        self.replay = None
        self.burning = None
        self.fast_index = -1  # last step taken by the canonical-line fast path
        self.next_placeholder = 0  # the index whose placeholder the reader should bring next
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
        if index == self.next_placeholder and index <= self.fast_index and type(value) is int and value == 0:
            self.next_placeholder += 1
            return  # the placeholder of a step the fast path has already taken
        path = f"$.steps[{index}]"
        if index != self.steps:
            # The fast path took steps whose placeholders the reader did not
            # find at $.steps[i] (a canonical-looking line nested inside
            # another value): what sits in their place is not those steps.
            fail(path, f"steps 1..{self.steps} were read from step lines that are not the items of $.steps (a step line nested inside another value).")
        status, position, ignited = check_step(value, path, self.scenario)
        self.feed(Transition(index + 1, path, self.prev, value, State(value["snapshot"], status, position), self.burning, ignited))

    def end(self):
        """The reader's explicit end-of-stream event: finish once, keep the result."""
        self.result = self.finish()

    def try_canonical_step(self, index, line):
        """Take step ``index`` from its canonical line if replay reproduces it exactly.

        Returns False (and changes nothing the strict path depends on) when
        the line is not the simulator's canonical bytes for this step.
        """
        replay = self.replay
        if replay is None or replay.mismatch is not None or self.prev.terminated:
            return False
        end = line.find(b"}", len(b'{"actions":{'))
        try:
            actions = json.loads(line[len(b'{"actions":'):end + 1])
        except (ValueError, RecursionError):  # deep nesting: the strict reader refuses it by its limits
            return False
        sim = replay.replayer.sim
        try:
            replayed = sim.step(actions)
        except ActionError:
            return False  # the state is unchanged; the strict path will report it
        if canonical_json(replayed) != line:
            replay.pending = replayed  # the strict path compares against this step
            return False
        cols = self.scenario.grid.cols
        cur = State(replayed["snapshot"], list(sim.status), list(sim.position))
        ignited = [r * cols + c for r, c in replayed["ignitions"]]
        transition = Transition(index + 1, f"$.steps[{index}]", self.prev, replayed, cur, self.burning, ignited)
        transition.replayed = True
        self.feed(transition)
        self.fast_index = index
        return True

    # -- the pipeline ---------------------------------------------------------

    def _open(self):
        """Both header and s_0 are in: build every accumulator."""
        if self.header_value is None or self.initial is None:
            return
        sc, s0 = self.scenario, self.initial
        self.checks = step_checks(sc, s0)
        self.replayed_checks = replayed_step_checks(self.checks)
        self.replay = ReplayCheck(sc, self.header_value, s0.raw) if self.replay_enabled else None
        self.resolutions = Resolutions(sc)
        self.movement = MovementCounts(sc)
        self.replanning = ReplanningCounts(sc)
        self.exposure = FireExposure(sc, s0)
        self.metrics = (self.resolutions, self.movement, self.replanning, self.exposure)
        self.burning = bytearray(sc.grid.size)
        for cell in sc.ignitions:
            self.burning[cell] = 1
        self.prev = s0

    def feed(self, tr):
        # A replayed step is the simulator's own: the stage-2 rules hold by
        # construction, so only the checks that keep state see it.
        for check in self.replayed_checks if tr.replayed else self.checks:
            check.feed(tr)
        if self.replay is not None:
            self.replay.feed(tr)
        if self.replay is None or self.replay.mismatch is None:
            # A record that failed replay gets no result: stop measuring it
            # (the checks go on, for the precedence rule of simulator.md §7).
            for accumulator in self.metrics:
                accumulator.feed(tr)
        for cell in tr.ignited:
            self.burning[cell] = 1
        self.prev = tr.cur
        self.steps = tr.t

    def finish(self):
        """Termination checks, then the replay verdict, then the report."""
        if self.steps == 0:
            fail("$.steps", "the record has no steps; metrics need a complete episode.")
        last = self.prev
        if not last.terminated:
            fail(f"$.steps[{self.steps - 1}].snapshot.terminated", f"the record ends at step {self.steps} without termination; metrics need a complete episode.")
        check_final_state(self.final_value, last, self.scenario)
        if self.replay is not None:
            self.replay.finish(self.final_value, self.steps)
            mismatch = self.replay.result()
            if mismatch is not None:
                raise MetricsInputError(REPLAY_PREFIX + str(mismatch)) from mismatch
        return build_report(
            self.scenario, self.header_value, last, self.steps,
            self.resolutions, self.movement, self.replanning, self.exposure,
        )


# Reader limits for one scenario's records (docs/limits.md).  A part (a step,
# header, initial_state or final_state) of a valid record holds at most about
# PART_BYTES_PER_PERSON bytes per person and PART_BYTES_PER_CELL per non-wall
# cell (a cell may be listed in both ignitions and burning), written
# canonically with 64-character IDs.  PART_SLACK leaves room for any
# reasonable whitespace and escaping.  The part limit keeps a hostile part's
# memory (Python objects take up to ~25 bytes per byte read) in proportion
# to the scenario rather than at the reader's 64 MiB default.
PART_BYTES_PER_PERSON = 1024
PART_BYTES_PER_CELL = 48
PART_BYTES_BASE = 4096
PART_SLACK = 16
MIN_PART_BYTES = 1 << 20


def record_limits(scenario):
    """The reader ``Limits`` for records of a compiled scenario."""
    bound = (
        PART_BYTES_BASE
        + PART_BYTES_PER_PERSON * len(scenario.person_ids)
        + PART_BYTES_PER_CELL * scenario.grid.open.count(1)
    )
    part = min(DEFAULT_LIMITS.max_part_bytes, max(MIN_PART_BYTES, PART_SLACK * bound))
    return Limits(
        max_depth=DEFAULT_LIMITS.max_depth,
        max_string_length=DEFAULT_LIMITS.max_string_length,
        max_integer_digits=DEFAULT_LIMITS.max_integer_digits,
        max_part_bytes=part,
    )


def _compile(scenario):
    try:
        return compile_scenario(scenario)
    except ScenarioError as exc:
        raise MetricsInputError(f"invalid scenario: {exc}") from exc


class MetricsStream:
    """Push form of ``episode_metrics``: ``feed(chunk)`` repeatedly, then ``close()``.

    Errors surface at the earliest ``feed`` or ``close`` that can know of
    them; after an error the stream refuses further input.
    """

    def __init__(self, scenario):
        self._engine = EpisodeEngine(_compile(scenario))
        self._parser = CanonicalLines(self._engine, RecordParser(self._engine, record_limits(self._engine.scenario)))
        self._result = None
        self._failed = None

    def feed(self, chunk):
        self._guard()
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            # bytes(5) would be five NUL bytes, bytes([1, 2]) two bytes: refuse, never convert.
            raise MetricsInputError(f"$: a record chunk must be bytes, not {type(chunk).__name__}.")
        try:
            self._parser.feed(chunk)
        except Exception as exc:
            self._failed = exc
            raise

    def close(self):
        self._guard()
        try:
            self._parser.close()
            self._result = self._engine.result
        except Exception as exc:
            self._failed = exc
            raise
        return self._result

    def _guard(self):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        if self._result is not None:
            raise MetricsInputError("the stream is closed; start a new MetricsStream for another record.")


def episode_metrics(scenario, record):
    """Validate, replay and measure one episode in a single streaming pass."""
    stream = MetricsStream(scenario)
    for chunk in iter_chunks(record):
        stream.feed(chunk)
    return stream.close()


class _ReplaySink:
    """Reader sink that only replays, raising at the first mismatch."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.replayer = None
        self.pending_initial = None
        self.final_value = None
        self.steps = 0

    def _check(self, mismatch):
        if mismatch is not None:
            raise mismatch

    def header(self, value):
        self.replayer = Replayer(self.scenario, value)
        self._check(self.replayer.error)
        if self.pending_initial is not None:
            self._check(self.replayer.initial_state(self.pending_initial))

    def initial_state(self, value):
        if self.replayer is None:
            self.pending_initial = value
        else:
            self._check(self.replayer.initial_state(value))

    def step(self, index, value):
        self.steps = index + 1
        self._check(self.replayer.step(index + 1, value, f"$.steps[{index}]"))

    def final_state(self, value):
        self.final_value = value

    def end(self):
        self._check(self.replayer.final_state(self.final_value, self.steps))


def verify_replay(scenario, record):
    """None if the record replays byte-identically, else ``ReplayMismatchError``.

    output.md allows no other outcome, so an invalid scenario is a
    ``ReplayMismatchError`` too, with the ``ScenarioError`` as ``__cause__``
    (as ``episode_metrics`` wraps it in a ``MetricsInputError``).
    """
    try:
        compiled = compile_scenario(scenario)
    except ScenarioError as exc:
        raise ReplayMismatchError(f"invalid scenario: {exc}") from exc
    sink = _ReplaySink(compiled)
    parser = RecordParser(sink, record_limits(compiled))
    try:
        for chunk in iter_chunks(record):
            parser.feed(chunk)
        parser.close()
    except ReplayMismatchError:
        raise
    except MetricsInputError as exc:
        raise ReplayMismatchError(f"the record cannot be read: {exc}") from exc
    return None
