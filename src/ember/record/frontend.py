"""The canonical-line fast path in front of the strict reader (simulator.md §5).

A record written by EMBER's own writer has one part per line.  A step line
that is byte-identical to the canonical bytes the replaying simulator
produces for that step is already proven: parsed, replayed and well formed
in one comparison.  The engine then runs the stage-2 checks and metrics on
the simulator's own step, and the strict reader receives the placeholder
``0`` in that step's place, so it still checks the whole text's syntax,
layout and step numbering.  The first line that is not such a step (or any
layout other than the canonical one) sends everything from there on through
the strict reader.
"""

HEADER_LINE = b'{"header":'
INITIAL_LINE = b'"initial_state":'
STEPS_LINE = b'"steps":[\n'
STEP_START = b'{"actions":{'
# A step line longer than this is read by the strict reader instead, so the
# fast path never buffers more than one ordinary step.
MAX_LINE_BYTES = 4 * 1024 * 1024


class CanonicalLines:
    """Push front end: ``feed(chunk)`` / ``close()``, like ``RecordParser``."""

    def __init__(self, engine, parser):
        self.engine = engine
        self.parser = parser
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
            line = chunk[start:newline + 1]
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
            expected_start = (HEADER_LINE, INITIAL_LINE, STEPS_LINE)[self.line_number - 1]
            self._to_parser(line)
            if not line.startswith(expected_start):
                self.active = False
            return
        body = line[:-1]
        comma = body.endswith(b",")
        if comma:
            body = body[:-1]
        if body.startswith(STEP_START) and self.engine.try_canonical_step(self.step_index, body):
            self.step_index += 1
            self.placeholders.append(b"0,\n" if comma else b"0\n")
            return
        self.active = False
        self._to_parser(line)
