"""The replayed-step fast path for records in any layout (docs/decisions.md, "Any layout").

``CanonicalLines`` takes the steps of EMBER's own one-step-a-line bytes.
A record from another writer (pretty-printed, key-sorted, other
whitespace) holds the same values in other bytes; ``StepTexts`` takes its
steps too:

* it walks the top-level members before ``"steps"`` with the C scanner of
  ``json`` (``raw_decode``), passing their bytes unchanged to the strict
  reader, which checks them as always;
* inside ``$.steps`` it finds each step's text with ``raw_decode`` and asks
  ``take_line(index, canonical_json(value))``, exactly the question
  ``CanonicalLines`` asks of a canonical line: is this the replaying
  simulator's own step?  If so the strict reader receives the placeholder
  ``0`` for the step's text (and the whitespace and commas around it
  unchanged), as on the canonical path.

Why a taken step breaks no strictness rule of simulator.md §5: its value
is, type for type, the simulator's step (equal canonical bytes), so its
numbers are integers, its strings IDs and fixed words, its depth and sizes
those of a valid step.  What a value cannot show is a duplicate key (the
later one wins in a dict) and a number spelled another way: a taken step
must have exactly as many ``:`` bytes as its canonical bytes, where every
``:`` is a key separator (the simulator's step strings never hold one), so
the text has no pair beyond the value's, hence no duplicate and no hidden
member.  ``-0`` for ``0`` is an integer the grammar allows; ``1.0`` or
``1e0`` decode to floats and fail the comparison.  The text must be ASCII
(escapes such as ``\\u0041`` are JSON's own and decode to the same value)
and at most half of the reader's part limit, so the strict reader would not
have refused the step for its size either.

Anything else (a failed comparison, text the walk does not expect, non-ASCII
bytes, a step too long) ends the fast path: everything not yet given to the
strict reader goes to it unchanged, and it reads the rest, so every error is
exactly the strict reader's.
"""

import json
import re

from ..canonical import RECORD_HEAD, STEP_LINE_START, canonical_json
from .frontend import CanonicalLines
from .placeholders import Placeholders
from .reader import RecordParser
from .sinks import ByteSink, RecordSink

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_RECORD_KEYS = ("header", "initial_state", "final_state")
_CANONICAL_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, UnicodeError)
# A step text longer than this is read by the strict reader instead: the walk decodes each step into
# Python values and a str besides its bytes, so it holds back no more than one ordinary step.
MAX_STEP_TEXT_BYTES = 4 * 1024 * 1024


class AnyLayout(ByteSink):
    """Push front end: ``CanonicalLines`` for EMBER's own bytes, ``StepTexts`` for any other layout.

    Chooses from the record's first bytes (a canonical record starts
    ``{"header":``); ``feed(chunk)`` / ``close()`` like ``RecordParser``.
    """

    def __init__(self, take_line, sink: RecordSink, limits):
        self._args = (take_line, sink, limits)
        self._head = b""
        self._front_end = None
        self._bound_trailing = False

    def bound_trailing_bytes(self):
        """``RecordParser.bound_trailing_bytes`` for the strict reader of the front end chosen."""
        self._bound_trailing = True
        if self._front_end is not None:
            self._front_end.parser.bound_trailing_bytes()

    def feed(self, chunk):
        if self._front_end is None:
            self._head += bytes(chunk)
            if len(self._head) < len(RECORD_HEAD) and RECORD_HEAD.startswith(self._head):
                return
            self._choose()
            return
        self._front_end.feed(chunk)

    def close(self):
        if self._front_end is None:
            self._choose()
        self._front_end.close()

    @property
    def chosen(self):
        """The front end chosen from the first bytes (None until enough have come)."""
        return self._front_end

    def _choose(self):
        head, self._head = self._head, b""
        if head.startswith(RECORD_HEAD[: len(head)]):
            self._front_end = CanonicalLines(*self._args)
        else:
            self._front_end = StepTexts(*self._args)
        if self._bound_trailing:
            self._front_end.parser.bound_trailing_bytes()
        if head:
            self._front_end.feed(head)


class StepTexts(ByteSink):
    """Push front end taking replayed steps from their text in any layout (see the module doc)."""

    def __init__(self, take_line, sink: RecordSink, limits):
        self.take_line = take_line
        self.placeholder_filter = Placeholders(sink)
        self.parser = RecordParser(self.placeholder_filter, limits)
        self.max_step = min(MAX_STEP_TEXT_BYTES, limits.max_part_bytes // 2)
        self.active = True
        self.data = b""  # input not yet given to the strict reader ...
        self.text = ""  # ... and the same, decoded (ASCII only, so indexes agree)
        self.pos = 0  # where the walk stands in ``text``
        self.fed = 0  # ``data[:fed]`` is already queued for the strict reader (or replaced by "0")
        self.out = []  # bytes queued for the strict reader, fed once per chunk
        self.state = "open"  # open, key, value, steps, item, after
        self.step_index = 0
        self.retry_at = 0  # after an incomplete parse, wait until the buffer is this long

    def feed(self, chunk):
        if not self.active:
            self.parser.feed(chunk)
            return
        chunk = bytes(chunk)
        if not chunk.isascii():
            self._stop(chunk)
            return
        self.data += chunk
        self.text += chunk.decode("ascii")
        if len(self.text) >= self.retry_at:
            self._walk(final=False)
        if self.active:
            self._flush()

    def close(self):
        if self.active:
            self._walk(final=True)
        if self.active:
            self._stop(b"")
        self.parser.close()

    # -- internals ------------------------------------------------------------

    def _stop(self, more):
        """Leave the fast path: everything queued or held back, then ``more``, to the strict reader."""
        self.active = False
        self.out.append(self.data[self.fed :])
        self.out.append(more)
        data = b"".join(self.out)
        self.out, self.data, self.text, self.fed, self.pos = [], b"", "", 0, 0
        if data:
            self.parser.feed(data)

    def _flush(self):
        """Give the strict reader everything the walk has passed, and forget it."""
        pos = self.pos
        if self.fed < pos:
            self.out.append(self.data[self.fed : pos])
        if self.out:
            data = b"".join(self.out)
            self.out.clear()
            self.parser.feed(data)
        if pos:
            self.data, self.text = self.data[pos:], self.text[pos:]
            self.retry_at = max(0, self.retry_at - pos)
            self.pos = 0
        self.fed = 0

    def _incomplete(self, final):
        """The walk needs more input than there is: wait for it, or give up."""
        if final or len(self.text) - self.pos > self.max_step:
            self._stop(b"")
        else:
            self.retry_at = len(self.text) + max(4096, (len(self.text) - self.pos) // 2)

    def _walk(self, final):
        skip = _WHITESPACE.match
        while self.active:
            text = self.text
            self.pos = pos = skip(text, self.pos).end()  # whitespace passes to the strict reader as it is
            if pos >= len(text):
                if final:
                    self._stop(b"")
                return
            char = text[pos]
            state = self.state
            if state == "open":  # the record object's "{"
                if char != "{":
                    return self._stop(b"")
                self.pos, self.state = pos + 1, "key"
            elif state == "key":  # a top-level key and its ":"
                if char != '"':
                    return self._stop(b"")
                try:
                    key, end = _DECODER.raw_decode(text, pos)
                except ValueError:
                    return self._incomplete(final)
                colon = skip(text, end).end()
                if colon >= len(text):
                    return self._incomplete(final)
                if text[colon] != ":" or not isinstance(key, str):
                    return self._stop(b"")
                if key == "steps":
                    self.pos, self.state = colon + 1, "steps"
                elif key in _RECORD_KEYS:
                    self.pos, self.state = colon + 1, "value"
                else:
                    return self._stop(b"")
            elif state == "value":  # header, initial_state or final_state: the strict reader checks it
                try:
                    _, end = _DECODER.raw_decode(text, pos)
                except (ValueError, RecursionError):
                    return self._incomplete(final)
                self.pos, self.state = end, "after"
            elif state == "after":  # "," before the next key
                if char != ",":
                    return self._stop(b"")
                self.pos, self.state = pos + 1, "key"
            elif state == "steps":  # the "[" of $.steps
                if char != "[":
                    return self._stop(b"")
                self.pos, self.state = pos + 1, "item"
                self._flush()  # the parts before $.steps reach the sink: the replay starts from them
            elif state == "item":  # a step, or the "]" after the last
                if char != "{":
                    return self._stop(b"")  # the rest (final_state, the end) is the strict reader's
                try:
                    value, end = _DECODER.raw_decode(text, pos)
                except (ValueError, RecursionError):
                    return self._incomplete(final)
                if not self._take(value, text, pos, end):
                    return self._stop(b"")
                self.state = "separator"
            elif state == "separator":  # "," before the next step, or "]"
                if char != ",":
                    return self._stop(b"")
                self.pos, self.state = pos + 1, "item"

    def _take(self, value, text, start, end):
        """Take the step whose text is ``text[start:end]`` if it is the replay's own."""
        if end - start > self.max_step:
            return False
        try:
            canonical = canonical_json(value)
        except _CANONICAL_ERRORS:
            return False
        if not canonical.startswith(STEP_LINE_START) or text.count(":", start, end) != canonical.count(b":"):
            return False
        if not self.take_line(self.step_index, canonical):
            return False
        # The strict reader gets the bytes before the step unchanged and "0" for the step.
        self.out.append(self.data[self.fed : start])
        self.out.append(b"0")
        self.fed = self.pos = end
        self.step_index += 1
        self.placeholder_filter.taken = self.step_index
        return True
