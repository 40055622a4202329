"""The canonical-line fast path in front of the strict reader (simulator.md §5).

A record written by EMBER's own writer has one part per line.  A step line
that is byte-identical to the canonical bytes the replaying simulator
produces for that step is already proven: parsed, replayed and well formed
in one comparison.  Two parties share the work:

* the front end (here) splits lines, asks ``take_line(index, line)``
  whether a step line is the replay's own step, and owns the placeholders
  entirely: the strict reader receives the placeholder ``0`` in a taken
  step's place, so it still checks the whole text's syntax, layout and
  step numbering, and ``Placeholders`` (``placeholders.py``) removes those zeros again before
  the sink sees the steps;
* ``take_line`` (the engine's, which asks the replay check to try the line)
  does everything else.

The first line that is not such a step (or any layout other than the
canonical one) sends everything from there on through the strict reader.
"""

from ..canonical import INITIAL_LINE_START, RECORD_HEAD, STEP_LINE_START, STEPS_LINE
from .placeholders import Placeholders
from .reader import RecordParser
from .sinks import ByteSink, RecordSink

_COMMA = ord(",")


class CanonicalLines(ByteSink):
    """Push front end of the strict reader: ``feed(chunk)`` / ``close()``, like ``RecordParser``.

    ``take_line(index, line)`` gets step ``index``'s line without its
    newline and separating comma and returns True when it has taken the
    step from it; ``sink`` and ``limits`` are the strict reader's.

    A line is held until its newline, up to ``limits.max_part_bytes``
    (``max_line_bytes``): the largest step the scenario's records can hold
    is within that limit (``record.limits.record_limits``), so a stadium's
    steps of tens of megabytes take the fast path too, and what is held is
    bounded by the grid and the population, as the strict reader's part is.
    A longer line cannot be a step of the replay and goes to the strict
    reader, which refuses it by the same limit.
    """

    def __init__(self, take_line, sink: RecordSink, limits):
        self.take_line = take_line
        self.max_line_bytes = limits.max_part_bytes
        self.placeholder_filter = Placeholders(sink)
        self.parser = RecordParser(self.placeholder_filter, limits)
        self.active = True
        self.partial = []
        self.partial_size = 0
        self.line_number = 0  # complete lines seen
        self.line_head = b""  # the start of the line under way, while one of the first three
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
            if self.line_number < 3:
                # The first three lines go to the strict reader as they come, so that an
                # error in them (not JSON, not an object, a wrong header) surfaces at the
                # feed that brought it, not when a newline arrives.
                start = self._head_piece(chunk, start, newline)
                if start is None or not self.active:
                    break
                continue
            if newline < 0:
                self._keep(chunk[start:])
                break
            if self.partial:
                self._joined_line(chunk, start, newline)
            else:
                self._line(chunk, start, newline + 1)  # in place: the line is sliced once, if at all
            start = newline + 1
            if not self.active:
                if start < len(chunk):
                    self.parser.feed(chunk[start:])
                return
        # Each feed leaves the strict reader as far as the input goes, so an
        # error surfaces at the feed that brought it.
        self._flush_placeholders()

    def _head_piece(self, chunk, start, newline):
        """Pass a piece of one of the first three lines to the strict reader; where the rest starts.

        Returns None when the chunk is used up.  Leaves the fast path as soon
        as the line cannot start as the canonical layout's line does.
        """
        end = len(chunk) if newline < 0 else newline + 1
        piece = chunk[start:end]
        expected = (RECORD_HEAD, INITIAL_LINE_START, STEPS_LINE)[self.line_number]
        head = self.line_head + piece[: len(expected) - len(self.line_head)]
        self.line_head = head
        self.parser.feed(piece)
        if not expected.startswith(head) or (newline >= 0 and head != expected):
            self.active = False  # not the canonical layout: the strict reader alone from here
        if newline >= 0:
            self.line_number += 1
            self.line_head = b""
        if not self.active:
            if end < len(chunk):
                self.parser.feed(chunk[end:])
            return None
        return None if end >= len(chunk) else end

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
        before = self.partial_size
        self.partial.append(piece)
        self.partial_size += len(piece)
        if self.partial_size > self.max_line_bytes:
            self._stop()
        elif before < len(STEP_LINE_START):
            # A line that cannot be a canonical step line goes to the strict reader at
            # once (it would at its newline anyway), so its errors surface at this feed.
            head = b"".join(self.partial)[: len(STEP_LINE_START)]
            if not STEP_LINE_START.startswith(head):
                self._stop()

    def _stop(self):
        """Leave the fast path: whatever is buffered goes to the strict reader."""
        self.active = False
        self._flush_placeholders()
        if self.partial:
            data = b"".join(self.partial)
            self.partial, self.partial_size = [], 0
            self.parser.feed(data)

    def _line(self, data, start, stop):
        """The complete line ``data[start:stop]`` (its newline last)."""
        self.line_number += 1
        end = stop - 1  # the newline
        comma = end > start and data[end - 1] == _COMMA
        if comma:
            end -= 1
        if data.startswith(STEP_LINE_START, start, end) and self._take(data[start:end], comma):
            return
        self._leave(data[start:stop])

    def _joined_line(self, chunk, start, newline):
        """The line held in ``partial`` and ended by ``chunk[start : newline + 1]``.

        Its pieces are joined once, without the separator, into the bytes
        ``take_line`` gets: a step line is several chunks long on a large
        floor, and a second copy of it would be a second copy of the record.
        """
        self.line_number += 1
        end = newline
        comma = end > start and chunk[end - 1] == _COMMA
        if comma:
            end -= 1
        elif end == start and self.partial[-1].endswith(b","):  # the comma ended the previous chunk
            comma = True
            self.partial[-1] = self.partial[-1][:-1]
        self.partial.append(chunk[start:end])
        body = b"".join(self.partial)
        self.partial, self.partial_size = [], 0
        if body.startswith(STEP_LINE_START) and self._take(body, comma):
            return
        self._leave(body + (b",\n" if comma else b"\n"))

    def _take(self, body, comma):
        """Ask ``take_line`` for the next step's line ``body``; a placeholder in its place if taken."""
        if not self.take_line(self.step_index, body):
            return False
        self.step_index += 1
        self.placeholder_filter.taken = self.step_index
        self.placeholders.append(b"0,\n" if comma else b"0\n")
        return True

    def _leave(self, line):
        """Leave the fast path at ``line`` (whole, with its separator): the strict reader from here on."""
        self.active = False
        self._to_parser(line)
