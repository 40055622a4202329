"""The two sinks of the reading pipeline (``pipeline.RecordInput``): bytes in, parts out.

``ByteSink`` takes a record's bytes (every stage of the pipeline is one:
the decompression, the front ends, the strict reader, the whole
``RecordInput``, and the engine's streams); ``RecordSink`` takes the parts
the strict reader hands on.  They are declared here, beneath the stages,
because each stage is a sink and ``pipeline`` imports every stage.
"""

import typing


class ByteSink(typing.Protocol):
    """A record's bytes, pushed: ``feed(chunk)`` in any chunking, then ``close()`` once at the end."""

    __slots__ = ()

    def feed(self, chunk):
        """The next bytes."""

    def close(self):
        """The end of the bytes: raises when what was fed is not a whole record."""


class RecordSink(typing.Protocol):
    """A record's parts in record order (simulator.md §5), as the strict reader (``RecordParser``) hands them."""

    __slots__ = ()

    def header(self, value):
        """The header object."""

    def initial_state(self, value):
        """The initial state object."""

    def step(self, index, value):
        """The step at ``index`` (from 0) of the ``steps`` array."""

    def final_state(self, value):
        """The final state object."""

    def end(self):
        """The whole text was a record: called once, after the final state."""
