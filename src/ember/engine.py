"""The single-pass engine: validate, replay and measure a record as it streams.

``EpisodeEngine`` is the sink of the record reader: it receives the record's
parts (header, initial state, each step, final state) in record order,
builds each transition (s_{t-1}, step_t, s_t) and hands it to the stage-2
checks, the replay check and the metric accumulators, in that order.
Memory holds one step and the per-person / per-cell state, never the
record.  ``episode_metrics`` (pull) and ``MetricsStream`` (push) differ only
in how bytes reach the same reader and engine.

The one way in for every reader of records is ``read_record`` (pull) or
``open_record`` (push): source → decompression → canonical-line front end →
strict reader → sink.  ``measure_run`` is the way in for an episode run in
EMBER's own simulator: its steps go to the same accumulators directly.
"""

import contextlib
import hashlib
import os
from typing import NamedTuple

from .checks.replay import ReplayCheck, ReplayedStep, Replayer
from .checks.shape import check_final_shape, check_step, fail
from .checks.stage1 import check_compatibility
from .checks.stage2 import check_final_matches_last, check_initial_state, replayed_step_checks, step_checks
from .errors import MetricsInputError, ReplayMismatchError, ScenarioError
from .metrics.exposure import FireExposure
from .metrics.movement import MovementCounts
from .metrics.replanning import ReplanningCounts
from .metrics.report import EpisodeMetrics, build_report
from .metrics.resolutions import Resolutions
from .record.compression import Decompression, sniff
from .record.limits import DEFAULT_LIMITS, record_limits
from .record.pipeline import RecordInput, read_into
from .record.writer import writing_record
from .scenario import CompiledScenario, compile_scenario
from .sim.loop import resolve_policy, run_policy
from .sim.policies import reads_only
from .sim.simulator import Simulator, collector_paused, marked_cells
from .transition import State, Transition, decode_snapshot

REPLAY_PREFIX = "record failed simulator replay verification: "


class EpisodeEngine:
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


def _compile(scenario):
    try:
        return compile_scenario(scenario)
    except ScenarioError as exc:
        raise MetricsInputError(f"invalid scenario: {exc}") from exc


# --- the one way in ------------------------------------------------------------------


def open_record(sink, limits=DEFAULT_LIMITS, take_line=None):
    """The record-reading entry point, push form: a ``RecordInput`` to ``feed`` bytes and ``close``.

    source bytes → decompression → canonical-line front end (with
    ``take_line``) → strict reader (``limits``) → ``sink``.
    """
    return RecordInput(sink, limits, take_line)


def read_record(record, sink, limits=DEFAULT_LIMITS, take_line=None):
    """The record-reading entry point, pull form: read the whole record source into ``sink``.

    ``record`` is anything output.md accepts (a path, a binary file or
    pipe, bytes, an iterable of bytes chunks); the rest as ``open_record``.
    Every reader of records (metrics, replay, render, campaigns, the CLI)
    comes in here or through ``open_record``.
    """
    read_into(record, open_record(sink, limits, take_line))


def engine_input(engine):
    """``open_record`` for an ``EpisodeEngine``: its scenario's limits, its fast path."""
    take_line = engine.take_line if engine.replay_enabled else None
    return open_record(engine, record_limits(engine.scenario), take_line)


def measure_record(compiled, record, on_state=None):
    """Validate, replay and measure ``record`` of the compiled scenario; the ``EpisodeMetrics``."""
    engine = EpisodeEngine(compiled, on_state=on_state)
    # Reading a file or bytes builds trees of JSON values and the replay's steps, never a cycle:
    # with the collector paused, the young-generation scans of each replayed step's burning list
    # are not made.  Sources and callbacks that run the caller's code keep it running.
    own_code_only = on_state is None and isinstance(record, (str, bytes, bytearray, os.PathLike))
    with collector_paused() if own_code_only else contextlib.nullcontext():
        read_record(record, engine, record_limits(compiled), engine.take_line)
    return engine.result


class MetricsStream:
    """Push form of ``episode_metrics``: ``feed(chunk)`` repeatedly, then ``close()``.

    Errors surface at the earliest ``feed`` or ``close`` that can know of
    them; after an error the stream refuses further input.
    """

    def __init__(self, scenario):
        self._engine = EpisodeEngine(_compile(scenario))
        self._input = engine_input(self._engine)
        self._result = None
        self._failed = None

    def feed(self, chunk):
        self._guard()
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            # bytes(5) would be five NUL bytes, bytes([1, 2]) two bytes: refuse, never convert.
            raise MetricsInputError(f"$: a record chunk must be bytes, not {type(chunk).__name__}.")
        try:
            self._input.feed(chunk)
        except Exception as exc:
            self._failed = exc
            raise

    def close(self):
        self._guard()
        try:
            self._input.close()
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
    return measure_record(_compile(scenario), record)


class _TextDigest:
    """The end of a second decompression: the SHA-256 of the record's (decompressed) JSON text."""

    def __init__(self):
        self.sha = hashlib.sha256()

    def feed(self, chunk):
        self.sha.update(chunk)

    def close(self):
        pass


class _BothInputs:
    """Feeds each chunk of the record to the engine's input, then to the digest's decompression."""

    def __init__(self, *inputs):
        self.inputs = inputs

    def feed(self, chunk):
        for record_input in self.inputs:
            record_input.feed(chunk)

    def close(self):
        for record_input in self.inputs:
            record_input.close()


def authenticate_record(scenario, record):
    """Authenticate and measure a record (stages 1-3, as ``episode_metrics``) and hash it, in one read.

    Returns (``EpisodeMetrics``, hex SHA-256 of the record's decompressed
    bytes: the JSON text, whether the file is plain, gzip or zstd).  The
    chunks go first to the engine, so a record it refuses (``MetricsInputError``)
    is never decompressed further for the digest.
    """
    compiled = _compile(scenario)
    engine = EpisodeEngine(compiled)
    digest = _TextDigest()
    both = _BothInputs(open_record(engine, record_limits(compiled), engine.take_line), Decompression(digest))
    read_into(record, both)
    return engine.result, digest.sha.hexdigest()


class _Counted:
    """Counts the decompressed bytes on their way to the digest; past ``max_bytes`` a ``MetricsInputError``."""

    def __init__(self, digest, max_bytes):
        self.digest = digest
        self.max_bytes = max_bytes
        self.length = 0

    def feed(self, chunk):
        self.length += len(chunk)
        if self.max_bytes is not None and self.length > self.max_bytes:
            raise MetricsInputError(
                f"$: the record is longer than {self.max_bytes:,} bytes decompressed (the limit of this reader)."
            )
        self.digest.feed(chunk)

    def close(self):
        self.digest.close()


class _SeedExpected:
    """A reader sink in front of an ``EpisodeEngine``: the header's seed must be the expected one."""

    def __init__(self, engine, seed):
        self.engine = engine
        self.seed = seed

    def header(self, value):
        seed = value.get("seed") if isinstance(value, dict) else None
        if type(seed) is int and seed != self.seed:
            raise MetricsInputError(f"$.header.seed: expected seed {self.seed}, the record's header names seed {seed}.")
        self.engine.header(value)

    def __getattr__(self, name):  # every other part goes to the engine unchanged
        return getattr(self.engine, name)


class AuthenticationStream:
    """Push form of ``authenticate_record``: ``feed(chunk)`` the record's bytes (plain, gzip or zstd), then
    ``close()`` -> (``EpisodeMetrics``, hex SHA-256 of the decompressed bytes).

    ``seed``, when given, is the seed the record must be of: a header naming
    another is refused as soon as the header is read.  ``max_bytes`` bounds
    the decompressed length.  Memory is the engine's (grid and population),
    never the record's length.  After an error the stream refuses further input.
    """

    def __init__(self, scenario, seed=None, max_bytes=None):
        compiled = scenario if isinstance(scenario, CompiledScenario) else _compile(scenario)
        engine = EpisodeEngine(compiled)
        self._engine = engine
        self._digest = _TextDigest()
        sink = engine if seed is None else _SeedExpected(engine, seed)
        # The engine first, as ``authenticate_record``: a record it refuses is decompressed no further.
        self._inputs = _BothInputs(
            open_record(sink, record_limits(compiled), engine.take_line),
            Decompression(_Counted(self._digest, max_bytes)),
        )
        self._failed = None

    def feed(self, chunk):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        try:
            self._inputs.feed(chunk)
        except Exception as exc:
            self._failed = exc
            raise

    def close(self):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        try:
            self._inputs.close()
        except Exception as exc:
            self._failed = exc
            raise
        return self._engine.result, self._digest.sha.hexdigest()


def record_suffix(head):
    """The file suffix of a record whose first bytes are ``head``: ``.record.gz`` (gzip), ``.record.zst`` (zstd)
    or ``.record`` (anything else), as every reader recognises them (campaign.md §5)."""
    kind = sniff(bytes(head[:4]))
    return {"gzip": ".record.gz", "zstd": ".record.zst"}.get(kind, ".record")


class DigestStream:
    """The SHA-256 of a record's decompressed bytes, pushed (``feed``/``close`` -> hex), without verifying it:
    an upload of a record already accepted is hashed, never verified again (service.md §3)."""

    def __init__(self, max_bytes=None):
        self._digest = _TextDigest()
        self._input = Decompression(_Counted(self._digest, max_bytes))

    def feed(self, chunk):
        self._input.feed(chunk)

    def close(self):
        self._input.close()
        return self._digest.sha.hexdigest()


class ComparisonStream:
    """Whether a record pushed (``feed``/``close``) decompresses to the same bytes as the stored record read
    from ``handle``: ``feed`` raises ``MetricsInputError`` as soon as the bytes pass the stored record's
    length or differ from it, so a re-upload to a key with an accepted record costs at most that record's
    length (service.md §9), whatever it would decompress to."""

    def __init__(self, handle):
        self._stored = _StoredRecord(handle)
        self._input = Decompression(_Compared(self._stored))

    def feed(self, chunk):
        self._input.feed(chunk)

    def close(self):
        self._input.close()
        self._stored.take(1)
        if self._stored.buffer:
            raise MetricsInputError(f"$: the record ends after {self._stored.offset:,} bytes, before the accepted one.")


class _StoredRecord:
    """The stored record's decompressed bytes, read as they are asked for (``take``)."""

    READ = 4096  # compressed bytes read at a time: the decompressed buffer stays small

    def __init__(self, handle):
        self.handle = handle
        self.buffer = bytearray()
        self.ended = False
        self.offset = 0  # bytes compared so far
        self.source = Decompression(self)

    def feed(self, chunk):  # the stored record's decompression hands its bytes here
        self.buffer += chunk.encode("utf-8") if isinstance(chunk, str) else chunk

    def close(self):
        pass

    def take(self, count):
        """Make ``count`` bytes ready in ``buffer`` (fewer at the stored record's end)."""
        while len(self.buffer) < count and not self.ended:
            block = self.handle.read(self.READ)
            if block:
                self.source.feed(block)
            else:
                self.ended = True
                self.source.close()


class _Compared:
    """Each decompressed piece of the upload against the stored record's next bytes."""

    def __init__(self, stored):
        self.stored = stored

    def feed(self, chunk):
        stored = self.stored
        piece = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        stored.take(len(piece))
        if len(stored.buffer) < len(piece):
            raise MetricsInputError(
                f"$: the record is longer than the accepted one ({stored.offset + len(stored.buffer):,} bytes)."
            )
        if stored.buffer[: len(piece)] != piece:
            where = f"{stored.offset:,} to {stored.offset + len(piece):,}"
            raise MetricsInputError(f"$: the record differs from the accepted one within bytes {where}.")
        del stored.buffer[: len(piece)]
        stored.offset += len(piece)

    def close(self):
        pass


class MeasuredRun(NamedTuple):
    """What ``measure_run`` gives: the episode's metrics, its final state (simulator.md §5) and,
    when the record was written, the hex SHA-256 of its (uncompressed) canonical bytes, else None."""

    metrics: EpisodeMetrics
    final_state: dict
    record_sha256: str | None


class MeasuringSink:
    """A sink of the episode loop (``sim.loop``) that measures: each step to an ``EpisodeEngine``.

    The simulator's own steps need no reading or replay: each becomes a
    replayed transition (``EpisodeEngine.replayed_step``) from the step and
    the state ``simulator`` holds after it.  The step that ends the episode
    ends the engine too: ``engine.result`` is then the ``EpisodeMetrics``.
    """

    def __init__(self, engine, simulator):
        self.engine = engine
        self.simulator = simulator

    def start(self, header, initial_state):
        self.engine.header(header)
        self.engine.initial_state(initial_state)

    def step(self, step, final_state):
        engine = self.engine
        engine.replayed_step(ReplayedStep(self.simulator, step))
        if final_state is not None:
            engine.final_state(final_state)
            engine.end()


def measure_run(scenario, policy, seed, out=None, *, live=True):
    """Run ``policy`` on ``scenario`` under ``seed`` in EMBER's simulator and measure it as it runs.

    The simulator-driven entry point (campaign.md §3): the one episode loop
    (``sim.loop.run_policy``) hands each step straight to the metric
    accumulators as a replayed transition (``MeasuringSink``), as the
    canonical-line fast path does, without encoding, re-reading or
    replaying it; memory stays constant in the number of steps.

    ``scenario`` is a scenario dict or a compiled scenario (an invalid one
    raises ``ScenarioError``, as ``run_episode``); ``policy`` a callable
    ``observation -> {person_id: action}`` or the name of a built-in policy;
    ``seed`` as for ``Simulator`` (a bad one raises its ``SeedError``).
    Illegal actions raise ``ActionError``, as in ``run_episode``.  With
    ``out`` (a path or a binary file) the canonical record is written there
    as it runs by the same writer as ``run_episode``'s, byte-identical,
    flushed step by step (a path through the one record opener,
    ``record.output.open_record_output``: ``.gz`` or ``.zst`` compressed).
    ``live=False`` writes a path complete or not at all, without a flush
    per part (the opener's whole mode, for a record nobody follows).

    Returns a ``MeasuredRun(metrics, final_state, record_sha256)``:
    ``metrics`` is exactly what ``episode_metrics(scenario, record)`` gives
    for that record, ``final_state`` the record's final state,
    ``record_sha256`` the hex SHA-256 of the record's canonical bytes when
    ``out`` was given (hashed as they are written), else None.
    """
    compiled = compile_scenario(scenario)
    # A built-in policy only reads its observations, and the steps go to the engine and the writer:
    # the simulator may share its lists (docs/decisions.md, "Scale"), and as EMBER's own code makes no
    # cycles, the collector is paused for the episode, as the simulator pauses it inside a step.
    built_in = reads_only(policy)
    simulator = Simulator(compiled, seed, shared_lists=built_in)
    policy = resolve_policy(policy, simulator)
    engine = EpisodeEngine(compiled, replay=False, simulator_steps_only=True)
    measuring = MeasuringSink(engine, simulator)
    with collector_paused() if built_in else contextlib.nullcontext():
        if out is None:
            final_state = run_policy(simulator, policy, (measuring,))
            return MeasuredRun(engine.result, final_state, None)
        digest = hashlib.sha256()
        with writing_record(out, live=live, digest=digest) as writer:  # the -o rules of run_episode (decisions.md)
            final_state = run_policy(simulator, policy, (measuring, writer))
    return MeasuredRun(engine.result, final_state, digest.hexdigest())


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
        self.replayer = Replayer(self.scenario, value, burning_lists=False)  # nothing reads a taken step
        self._check(self.replayer.error)
        if self.pending_initial is not None:
            self._check(self.replayer.initial_state(self.pending_initial))

    def initial_state(self, value):
        if self.replayer is None:
            self.pending_initial = value
        else:
            self._check(self.replayer.initial_state(value))

    def take_line(self, index, line):
        """The fast path: a step line that is the replay's own step is verified."""
        if self.replayer is None or self.replayer.sim is None or index != self.steps:
            return False
        if self.replayer.try_line(line) is None:
            return False
        self.steps = index + 1
        return True

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
    try:
        read_record(record, sink, record_limits(compiled), sink.take_line)
    except ReplayMismatchError:
        raise
    except MetricsInputError as exc:
        raise ReplayMismatchError(f"the record cannot be read: {exc}") from exc
    return None
