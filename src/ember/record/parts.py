"""The pull API of the record reader: ``iter_parts`` yields a record's parts as they are read.

Built on top of the push assembly (``pipeline.RecordInput``: decompression,
strict reader), never below it, as ijson builds its ``items`` on its push
parsers: the push core (``reader.RecordParser``) knows nothing of this
module, so ``record/`` has no import cycle.
"""

import collections

from .limits import DEFAULT_LIMITS
from .pipeline import RecordInput
from .sinks import RecordSink
from .source import iter_chunks

# iter_parts feeds the parser this much at a time and yields the parts read
# before feeding more: with a whole 64 KiB chunk's parts (20 steps) alive at
# once, the cyclic garbage collector took 10-25% more time.
_DRAIN_EVERY = 16 * 1024


class PartQueue(RecordSink):
    """A sink that queues the tuples ``iter_parts`` yields."""

    def __init__(self, parts):
        self._append = parts.append

    def header(self, value):
        self._append(("header", value))

    def initial_state(self, value):
        self._append(("initial_state", value))

    def step(self, index, value):
        self._append(("step", index, value))

    def final_state(self, value):
        self._append(("final_state", value))

    def end(self):
        pass


def iter_parts(source, chunk_size=65536, *, limits=DEFAULT_LIMITS):
    """Yield the parts of a record as they are read.

    ``source`` is a path (str or os.PathLike), a binary file object (a pipe
    too: data is parsed as it arrives), bytes-like, or an iterable of bytes
    chunks.  Yields ``("header", dict)``, ``("initial_state", dict)``,
    ``("step", index, dict)`` for each step and ``("final_state", dict)``,
    in record order, and stops once the whole input was read and valid.
    Text (a text-mode file, str chunks) is a MetricsInputError, as is bad
    input (see ``RecordParser``).
    """
    if type(chunk_size) is not int or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, not {chunk_size!r}")

    parts = collections.deque()
    record_input = RecordInput(PartQueue(parts), limits)
    chunks = iter_chunks(source, chunk_size)
    try:
        for chunk in chunks:
            for start in range(0, len(chunk), _DRAIN_EVERY):
                record_input.feed(chunk[start : start + _DRAIN_EVERY])
                while parts:
                    yield parts.popleft()
    finally:
        chunks.close()
    record_input.close()
    while parts:
        yield parts.popleft()
