"""The one assembly of a record reader: bytes → decompression → front end → strict reader → sink.

Every reader of records goes through ``RecordInput`` (the engine's
``read_record`` and ``MetricsStream``, ``verify_replay``, ``render``,
``iter_parts``): nothing else builds a ``RecordParser`` and loops over chunks.
Every stage is a ``sinks.ByteSink``; the parts go to a ``sinks.RecordSink``.
"""

from .compression import Decompression
from .layouts import AnyLayout
from .limits import DEFAULT_LIMITS
from .reader import RecordParser
from .sinks import ByteSink, RecordSink
from .source import iter_chunks


class RecordInput(ByteSink):
    """Push form: ``feed(chunk)`` the record's bytes in any chunking, then ``close()``.

    The bytes may be gzip or zstd (see ``compression``); ``sink`` gets the
    parts (see ``RecordParser``); ``limits`` bound the reader.  With
    ``take_line`` (see ``CanonicalLines``) the replayed-step fast path runs
    in front of the strict reader, in any layout (``AnyLayout``).
    """

    def __init__(self, sink: RecordSink, limits=DEFAULT_LIMITS, take_line=None):
        if take_line is None:
            self.front_end = parser = RecordParser(sink, limits)
        else:
            self.front_end = parser = AnyLayout(take_line, sink, limits)
        self._decompression = Decompression(self.front_end, on_compressed=parser.bound_trailing_bytes)

    def feed(self, chunk):
        self._decompression.feed(chunk)

    def close(self):
        self._decompression.close()


def read_into(record, record_input: ByteSink, chunk_size=None):
    """Feed every chunk of the record source ``record`` (see ``iter_chunks``) to ``record_input``, then close it."""
    chunks = iter_chunks(record) if chunk_size is None else iter_chunks(record, chunk_size)
    try:
        for chunk in chunks:
            record_input.feed(chunk)
    finally:
        chunks.close()
    record_input.close()
