"""The canonical-line fast path in front of the strict reader (simulator.md §5).

A record written by EMBER's own writer has one part per line.  A step line
that is byte-identical to the canonical bytes the replaying simulator
produces for that step is already proven: parsed, replayed and well formed
in one comparison.  Two parties share the work:

* the front end (here) splits lines, asks ``take_line(index, line)``
  whether a step line is the replay's own step, and owns the placeholders
  entirely: the strict reader receives the placeholder ``0`` in a taken
  step's place, so it still checks the whole text's syntax, layout and
  step numbering, and ``_Placeholders`` removes those zeros again before
  the sink sees the steps;
* ``take_line`` (the engine's, which asks the replay check to try the line)
  does everything else.

The first line that is not such a step (or any layout other than the
canonical one) sends everything from there on through the strict reader.
"""

from ..canonical import HEADER_LINE_START, INITIAL_LINE_START, STEP_LINE_START, STEPS_LINE
from ..errors import MetricsInputError
from .reader import RecordParser

# A step line longer than this is read by the strict reader instead, so the
# fast path never buffers more than one ordinary step.
MAX_LINE_BYTES = 4 * 1024 * 1024


class _Placeholders:
    """Between the strict reader and the sink: drops the placeholders of taken steps.

    A taken step's placeholder must come back from the reader as the item
    of ``$.steps`` with the same index; anything else means the taken lines
    were not the items of ``$.steps`` (a step line nested inside another
    value), and what the sink has been given does not stand for the record.
    """

    def __init__(self, sink):
        self.sink = sink
        self.taken = 0  # steps taken from their lines
        self.returned = 0  # their placeholders read back

    def header(self, value):
        self.sink.header(value)

    def initial_state(self, value):
        self.sink.initial_state(value)

    def step(self, index, value):
        if self.returned < self.taken:
            if index == self.returned and type(value) is int and value == 0:
                self.returned += 1
                return
            self._misplaced(index)
        self.sink.step(index, value)

    def final_state(self, value):
        self.sink.final_state(value)

    def end(self):
        if self.returned < self.taken:
            self._misplaced(self.returned)
        self.sink.end()

    def _misplaced(self, index):
        raise MetricsInputError(
            f"$.steps[{index}]: steps 1..{self.taken} were read from step lines that are not the items of "
            "$.steps (a step line nested inside another value)."
        )


class CanonicalLines:
    """Push front end of the strict reader: ``feed(chunk)`` / ``close()``, like ``RecordParser``.

    ``take_line(index, line)`` gets step ``index``'s line without its
    newline and separating comma and returns True when it has taken the
    step from it; ``sink`` and ``limits`` are the strict reader's.
    """

    def __init__(self, take_line, sink, limits):
        self.take_line = take_line
        self.placeholder_filter = _Placeholders(sink)
        self.parser = RecordParser(self.placeholder_filter, limits)
        self.active = True
        self.partial = []
        self.partial_size = 0
        self.line_number = 0
        self.step_index = 0
        self.placeholders = []  # taken steps' placeholders, fed to the parser once per chunk

    def feed(self, chunk):
        if not self.active:
            self.parser.feed(chunk)
            return
        chunk = bytes(chunk)
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                self._keep(chunk[start:])
                break
            line = chunk[start : newline + 1]
            if self.partial:
                line = b"".join(self.partial) + line
                self.partial, self.partial_size = [], 0
            self._line(line)
            start = newline + 1
            if not self.active:
                if start < len(chunk):
                    self.parser.feed(chunk[start:])
                return
        # Each feed leaves the strict reader as far as the input goes, so an
        # error surfaces at the feed that brought it.
        self._flush_placeholders()

    def close(self):
        self._stop()
        self.parser.close()

    def _flush_placeholders(self):
        if self.placeholders:
            data = b"".join(self.placeholders)
            self.placeholders.clear()
            self.parser.feed(data)

    def _to_parser(self, data):
        """Strict-reader input in order: first the placeholders still held back."""
        self._flush_placeholders()
        self.parser.feed(data)

    def _keep(self, piece):
        if not piece:
            return
        self.partial.append(piece)
        self.partial_size += len(piece)
        if self.partial_size > MAX_LINE_BYTES:
            self._stop()

    def _stop(self):
        """Leave the fast path: whatever is buffered goes to the strict reader."""
        self.active = False
        self._flush_placeholders()
        if self.partial:
            data = b"".join(self.partial)
            self.partial, self.partial_size = [], 0
            self.parser.feed(data)

    def _line(self, line):
        self.line_number += 1
        if self.line_number <= 3:
            expected_start = (HEADER_LINE_START, INITIAL_LINE_START, STEPS_LINE)[self.line_number - 1]
            self._to_parser(line)
            if not line.startswith(expected_start):
                self.active = False
            return
        body = line[:-1]
        comma = body.endswith(b",")
        if comma:
            body = body[:-1]
        if body.startswith(STEP_LINE_START) and self.take_line(self.step_index, body):
            self.step_index += 1
            self.placeholder_filter.taken = self.step_index
            self.placeholders.append(b"0,\n" if comma else b"0\n")
            return
        self.active = False
        self._to_parser(line)
