"""``verify_replay``: whether a record replays byte-identically, and nothing else."""

from ..checks.replay import Replayer
from ..errors import MetricsInputError, ReplayMismatchError, ScenarioError
from ..record.limits import record_limits
from ..record.sinks import RecordSink
from ..scenario import compile_scenario
from .read import read_record


class _ReplaySink(RecordSink):
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
