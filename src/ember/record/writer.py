"""The live record writer (simulator.md §5) and ``run_episode``.

``RecordWriter`` is a sink of the one episode loop (``sim.loop``): each
part goes out as one complete line and is flushed at once, so a record
can be followed while the episode runs (``tail -f``, a pipe into
``ember metrics -``).  A step's line ends with the separator that follows
it, which the loop tells it by handing it the final state with the last
step.  ``writing_record(out)`` gives the writer for a path (through the one
record opener, ``output.open_record_output``) or for a binary stream.
"""

import contextlib
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
from ..sim.loop import EpisodeSink, resolve_policy, run_policy
from ..sim.policies import reads_only
from ..sim.simulator import Simulator
from .output import open_record_output


class RecordWriter(EpisodeSink):
    """Writes canonical record bytes to a binary stream, flushing per part (a sink of ``sim.loop``).

    With ``digest`` (a ``hashlib`` object) every byte written is hashed too:
    the record's SHA-256 without reading it back (a campaign row's
    ``record_sha256``).
    """

    def __init__(self, stream, digest=None):
        self.stream = stream
        self.digest = digest

    def _emit(self, data):
        if self.digest is not None:
            self.digest.update(data)
        self.stream.write(data)
        self.stream.flush()

    def start(self, header, initial_state):
        self._emit(RECORD_HEAD + canonical_json(header) + AFTER_HEADER + canonical_json(initial_state) + AFTER_INITIAL)

    def on_step(self, step, final_state=None):
        """One step line; with ``final_state`` (the episode ended) the record's tail too."""
        if final_state is None:
            self._emit(canonical_json(step) + BETWEEN_STEPS)
        else:
            self._emit(canonical_json(step) + AFTER_STEPS + canonical_json(final_state) + RECORD_TAIL)


@contextlib.contextmanager
def writing_record(out, *, live=True, digest=None):
    """A ``RecordWriter`` for ``out``: a path (opened by ``open_record_output``, compressed by its
    name, see there for ``live``) or a binary file (written as it is, flushed per part)."""
    if isinstance(out, (str, os.PathLike)):
        with open_record_output(out, live=live) as stream:
            yield RecordWriter(stream, digest)
    else:
        yield RecordWriter(out, digest)


def run_episode(scenario, policy, seed, out):
    """Run ``policy`` to termination, streaming the record to ``out``; the final state.

    ``policy`` is a callable ``observation -> {person_id: action}`` or the
    name of a built-in policy; ``out`` a path (written gzip-compressed when
    it ends in ``.gz``, zstd when ``.zst``: ``output.open_record_output``)
    or a binary file.
    """
    # A built-in policy only reads its observations and the writer only encodes: lists may be shared.
    simulator = Simulator(scenario, seed, shared_lists=reads_only(policy))
    policy = resolve_policy(policy, simulator)  # an unknown name opens no file
    with writing_record(out) as writer:
        return run_policy(simulator, policy, (writer,))
