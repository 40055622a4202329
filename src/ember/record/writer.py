"""The live record writer (simulator.md §5) and ``run_episode``.

Each part goes out as one complete line and is flushed at once, so a record
can be followed while the episode runs (``tail -f``, a pipe into
``ember metrics -``).  A step's line ends with the separator that follows
it, which the simulator knows because it knows whether it terminated.
"""

import os

from ..canonical import (
    AFTER_HEADER,
    AFTER_INITIAL,
    AFTER_STEPS,
    BETWEEN_STEPS,
    RECORD_HEAD,
    RECORD_TAIL,
    canonical_json,
)
from ..sim.policies import make_policy
from ..sim.simulator import Simulator
from .compression import open_output


class RecordWriter:
    """Writes canonical record bytes to a binary stream, flushing per part."""

    def __init__(self, stream):
        self.stream = stream

    def _emit(self, data):
        self.stream.write(data)
        self.stream.flush()

    def start(self, header, initial_state):
        self._emit(RECORD_HEAD + canonical_json(header) + AFTER_HEADER + canonical_json(initial_state) + AFTER_INITIAL)

    def step(self, step, final_state=None):
        """One step line; with ``final_state`` (the episode ended) the record's tail too."""
        if final_state is None:
            self._emit(canonical_json(step) + BETWEEN_STEPS)
        else:
            self._emit(canonical_json(step) + AFTER_STEPS + canonical_json(final_state) + RECORD_TAIL)


def run_episode(scenario, policy, seed, out):
    """Run ``policy`` to termination, streaming the record to ``out``.

    ``policy`` is a callable ``observation -> {person_id: action}`` or the
    name of a built-in policy; ``out`` a path (written gzip-compressed when
    it ends in ``.gz``, zstd when ``.zst``, see ``compression.open_output``)
    or a binary file.  Returns the final state.
    """
    sim = Simulator(scenario, seed)
    if isinstance(policy, str):
        policy = make_policy(policy, sim.scenario, seed)
    if isinstance(out, (str, os.PathLike)):
        with open_output(out) as stream:
            return _run(sim, policy, RecordWriter(stream))
    return _run(sim, policy, RecordWriter(out))


def _run(sim, policy, writer):
    writer.start(sim.header, sim.initial_state)
    while not sim.terminated:
        step = sim.step(policy(sim.observe()))
        writer.step(step, sim.final_state)
    return sim.final_state
