"""The byte guard: what yajl 2 and ijson 3.6 would let through wrongly, refused before they see it.

Part of the strict reader (``reader.py``), kept apart because it works on
bytes, not on JSON events: a few C-level bytes operations per piece.
"""

import bisect
import re

# Digits to "0", every other byte to " ": finds digit runs with bytes.find.
_DIGIT_MASK = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_SURROGATE = re.compile(rb"[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_SURROGATE = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_LOW_SURROGATE_START = re.compile(rb"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]{0,2})?)?)?)?")
_NOT_WHITESPACE = ((b"\x0b", "vertical tab"), (b"\x0c", "form feed"))


def _scan_escapes(data):
    """Check the string escapes in ``data``, which starts outside any escape.

    Returns ``(end, problem, quotes)``: ``data[:end]`` is safe; ``problem``
    says why ``data[end]`` is refused, or is None when the rest of ``data``
    is an escape that needs the next piece; ``quotes`` lists the offsets of
    escaped quotes before ``end``.  Only string escapes start with a
    backslash, and one outside a string is a syntax error for yajl.
    """
    quotes = []
    size = len(data)
    at = data.find(b"\\")
    while at != -1:
        kind = data[at + 1 : at + 2]
        if not kind:
            return at, None, quotes
        if kind == b'"':
            quotes.append(at + 1)
        if kind != b"u":
            at = data.find(b"\\", at + 2)
            continue
        if at + 6 > size:
            return at, None, quotes
        unit = data[at + 2 : at + 6]
        if _SURROGATE.fullmatch(unit):
            escape = data[at : at + 6].decode("ascii")
            if unit[1] in b"cCdDeEfF":
                return at, ("Malformed JSON", f"a string has the unpaired low surrogate escape {escape}."), quotes
            follower = data[at + 6 : at + 12]
            if len(follower) < 6 and _LOW_SURROGATE_START.fullmatch(follower):
                return at, None, quotes
            if not _LOW_SURROGATE.fullmatch(follower):
                return at, ("Malformed JSON", f"a string has the unpaired high surrogate escape {escape}."), quotes
            at = data.find(b"\\", at + 12)
        else:
            at = data.find(b"\\", at + 6)
    return size, None, quotes


class ByteGuard:
    """Refuses, before yajl reads them, the bytes yajl 2 or ijson 3.6 mishandle.

    * yajl takes vertical tab and form feed for whitespace (RFC 8259 does
      not, and they are invalid in strings too).
    * yajl decodes an unpaired UTF-16 surrogate escape to "?" or to a wrong
      character instead of refusing it.
    * ijson converts a number token once yajl has read all of it; past
      ``sys.get_int_max_str_digits()`` it sends the builder a NULL, and with
      that limit off the conversion takes quadratic time.  So no number
      with a digit run longer than max_integer_digits reaches yajl's end.

    Digits in a string are fine, so the guard needs to know whether a byte
    is inside a string: it counts unescaped quotes from the start.  The
    count is right for any text that yajl accepts, and the parser hands
    yajl the bytes before a refusal first, so that an earlier syntax error
    is the one reported.  Unless a piece holds a backslash, all this is a
    few bytes operations in C (about 0.1 ms per 64 KiB).
    """

    def __init__(self, max_digits):
        self._max_digits = max_digits
        self._long_run = b"0" * (max_digits + 1)
        self._in_string = False  # at the end of the bytes passed so far
        self._digits = 0  # length of the digit run outside strings they end with
        self._held = b""  # an escape that ends in the next piece

    def scan(self, piece):
        """Return ``(safe, problem)``: the bytes yajl may read now, and None
        or ``(kind, sentence)`` saying why the byte after them is refused."""
        data = self._held + piece if self._held else piece
        self._held = b""
        end, problem, escaped_quotes = len(data), None, []
        if b"\\" in data:
            end, problem, escaped_quotes = _scan_escapes(data)
            if problem is None:
                self._held = data[end:]
        for byte, name in _NOT_WHITESPACE:
            at = data.find(byte, 0, end)
            if at != -1:
                end = at
                problem = (
                    "Malformed JSON",
                    f"byte {byte[0]:#04x} ({name}) is not JSON whitespace; only space, tab, LF and CR are.",
                )
        mask = data.translate(_DIGIT_MASK)
        at = self._long_number(data, mask, end, escaped_quotes)
        if at is not None:
            end = at
            problem = ("Limit exceeded", f"a number has more than max_integer_digits={self._max_digits} digits.")
        if problem is None:
            self._advance(data, mask, end, escaped_quotes)
        return data[:end], problem

    def _long_number(self, data, mask, end, escaped_quotes):
        """The offset of the first digit run of a too long number in data[:end], or None."""
        if self._digits:  # a number goes on from the previous piece
            lead = mask.find(b" ", 0, end)
            if self._digits + (end if lead == -1 else lead) > self._max_digits:
                return 0
        at = mask.find(self._long_run, 0, end)
        counted = quotes = 0  # quotes in data[:counted], counted on from there: a
        # count from 0 for each run made a piece of many digit strings quadratic
        while at != -1:
            quotes += data.count(b'"', counted, at)
            counted = at
            if self._in_string == ((quotes - bisect.bisect_left(escaped_quotes, at)) % 2 == 0):
                at = mask.find(b" ", at, end)
                if at == -1:
                    return None
                at = mask.find(self._long_run, at, end)
            else:
                return at
        return None

    def _advance(self, data, mask, end, escaped_quotes):
        """Move the string and digit-run state past data[:end]."""
        if end == 0:
            return
        quotes = data.count(b'"', 0, end) - len(escaped_quotes)
        self._in_string ^= quotes % 2 == 1
        if self._in_string or mask[end - 1] != 0x30:
            self._digits = 0
        else:
            start = mask.rfind(b" ", 0, end) + 1
            self._digits = end - start + (self._digits if start == 0 else 0)
