"""Strict streaming reader of a run record (simulator.md §1 and §5).

A record is one JSON object ``{"header", "initial_state", "steps",
"final_state"}`` that may be hundreds of MB long.  ``RecordParser`` is a push
parser: bytes go in with ``feed`` in any chunking, and each part goes to a
sink as soon as its last byte has been read, a step at a time, in constant
memory.  ``parts.iter_parts`` is the pull API built on top of it (and of
the whole push assembly, ``pipeline.RecordInput``), in its own module.  The reader checks the
JSON text and the record's top level; the inner structure of the parts is
another layer's job.

How it is built: ijson's C backend (yajl 2) turns bytes into events, and one
Python generator (``_build``) turns events into values, sending each event
straight from the C parser into the generator (the public ``*_coro`` API
would add a Python ``send`` per event).  Keeping the builder's state in
generator locals and comparing event names with ``==`` was the fastest of
the variants measured (an object with a ``send`` method was about 10%
slower, identity tests on the event names no faster).  Before yajl sees a
piece of input, the byte guard (``guard.py``) refuses the few things yajl
and ijson let through wrongly, with C-level bytes operations only.  The
limits are in ``limits.py``.

Throughput, CPU time, best of 9, Python 3.11, ijson 3.6 yajl2_c, on a shared
2-core machine; a synthetic record of 5,000 steps (20 people, 3.4 KB a step,
17 MB, compact JSON, 860 ijson events a step), read in 64 KiB chunks:

    ijson.items(f, "steps.item"), the floor, no checks   0.37 s  13,600 steps/s
    RecordParser, all checks                             0.71 s   7,100 steps/s
    parts.iter_parts(f), all checks                      0.75 s   6,700 steps/s

A strict read costs about twice the floor (10^6 such steps: about 2.5
minutes against 1.2).  The difference is the Python run for each event,
about 80 ns; the byte guard costs 3%.  Memory stays flat: 50,000 steps
(171 MB) were read with the same peak RSS as 5,000.
"""

import json
import re

import ijson

from ..errors import MetricsInputError
from .guard import ByteGuard
from .limits import DEFAULT_LIMITS
from .sinks import ByteSink, RecordSink

try:
    _backend = ijson.get_backend("yajl2_c")
except ImportError:  # ijson without its C extension: about 20x slower
    _backend = ijson.get_backend(ijson.backend_name)

#: The ijson backend in use; anything but "yajl2_c" is much slower, and
#: callers may want to warn about it.
BACKEND_NAME = _backend.backend_name

# yajl is given at most this many bytes at once (and at most 1/16 of
# max_part_bytes), so that a huge part is refused while it is being read.
_PIECE = 64 * 1024

_PARTS = ("header", "initial_state", "steps", "final_state")
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\n\r"


# --- paths ------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_LONGEST_KEY_SHOWN = 100


def _format_path(segments):
    """``$.steps[12].snapshot``: a key as ``.key``, or ``["key"]`` when not plain."""
    out = ["$"]
    for segment in segments:
        if type(segment) is int:
            out.append(f"[{segment}]")
        else:
            if len(segment) > _LONGEST_KEY_SHOWN:
                segment = segment[:_LONGEST_KEY_SHOWN] + "..."
            if _PLAIN_KEY.fullmatch(segment):
                out.append("." + segment)
            else:
                out.append("[" + json.dumps(segment, ensure_ascii=False) + "]")
    return "".join(out)


def _segments(stack, top, key, in_list):
    """The keys and indices leading to the place the builder is reading.

    ``stack`` holds, for each open container, its parent's state when it
    opened; its first entry is the ``_Document`` frame, which has no segment.
    A container is attached to its parent when it closes, so the index of
    the member being read in an array is the array's length.
    """
    segments = []
    for container, member, is_list in [*stack, (top, key, in_list)][1:]:
        if is_list:
            segments.append(len(container))
        elif member is not None:
            segments.append(member)
    return segments


def _error(kind, segments, sentence):
    # Same layout as every other record error: the path first, then the reason.
    return MetricsInputError(f"{_format_path(segments)}: {kind}: {sentence}")


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", bool: "a boolean"}


def _json_type(value):
    return "null" if value is None else _JSON_TYPES.get(type(value), "a value")


def _not_integer(value, segments):
    return _error(
        "Non-integer number",
        segments,
        f"{value} is not an integer; records hold only integers, written -?(0|[1-9][0-9]*).",
    )


def _too_long(what, segments, max_string):
    return _error("Limit exceeded", segments, f"{what} is longer than max_string_length={max_string} characters.")


def _bad_key(key, stack, top, in_list, max_string):
    """The error for an object key that is too long, or already in the object."""
    if len(key) > max_string:
        return _too_long("an object key", _segments(stack, top, None, in_list), max_string)
    return _error(
        "Duplicate key",
        _segments(stack, top, key, in_list),
        "the object already has this key; a key may appear once in an object.",
    )


# --- where complete values go ------------------------------------------------


class _Record:
    """The top-level object: hands each part to the sink as soon as it is complete.

    The builder uses it as the dict it would otherwise fill (``key in``
    before a key's value, item assignment after it), which keeps the
    top-level rules out of the code run for every event.
    """

    def __init__(self, sink):
        self.sink = sink
        self.steps = _Steps(self)
        self.seen = set()  # keys whose value has been read completely
        self.parts = 0  # parts handed to the sink, steps included
        self.complete = False

    def __contains__(self, key):
        # Called with each top-level key before its value is read: the
        # place to refuse a key before reading what follows it.
        if key not in _PARTS:
            raise _error(
                "Unexpected key",
                [key],
                "a record object has only the keys header, initial_state, steps and final_state.",
            )
        if key == "steps":
            missing = [name for name in ("header", "initial_state") if name not in self.seen]
            if missing:
                raise _error(
                    "Misplaced key",
                    ["steps"],
                    f"steps must come after header and initial_state, and {' and '.join(missing)} did not.",
                )
        return key in self.seen

    def __setitem__(self, key, value):
        if key == "steps":
            if value is not self.steps:
                raise _error("Wrong type", ["steps"], f"steps must be an array, not {_json_type(value)}.")
        else:
            self.emit(getattr(self.sink, key), value)
        self.seen.add(key)

    def emit(self, method, *args):
        method(*args)
        self.parts += 1

    def finish(self):
        missing = [name for name in _PARTS if name not in self.seen]
        if missing:
            raise _error("Missing key", [], f"the record object has no {' and no '.join(missing)}.")
        self.complete = True


class _Steps:
    """The ``steps`` array: hands each step to the sink instead of keeping it."""

    def __init__(self, record):
        self.record = record
        self.count = 0

    def __len__(self):
        return self.count

    def append(self, value):
        self.record.emit(self.record.sink.step, self.count, value)
        self.count += 1


class _Document:
    """Where the top-level value lands: only the record object is welcome."""

    def __init__(self, record):
        self.record = record

    def append(self, value):
        if value is not self.record:
            raise _error("Wrong type", [], f"a record must be a JSON object, not {_json_type(value)}.")
        self.record.finish()


# --- events to values ----------------------------------------------------------

# A query the parser sends the builder to learn where it is reading.
_WHERE = object()


def _open(is_map, stack, top, key, in_list, record, max_depth):
    """The container for an array or object opening above the parts' insides, or too deep."""
    depth = len(stack)
    if depth >= max_depth:
        raise _error(
            "Limit exceeded",
            _segments(stack, top, key, in_list),
            f"arrays and objects are nested more than max_depth={max_depth} deep.",
        )
    if depth == 0:
        if not is_map:
            raise _error("Wrong type", [], "a record must be a JSON object, not an array.")
        return record
    if key == "steps" and depth == 1:
        if is_map:
            raise _error("Wrong type", ["steps"], "steps must be an array, not an object.")
        return record.steps
    return {} if is_map else []


def _build(record, limits):
    """Build values from ijson events, sent as ``(event, value)`` tuples.

    This generator runs once per event (860 times per step of a typical
    record), so its state lives in local variables and the common events
    come first.  Values are attached to their parent when complete, which
    lets ``_Record`` and ``_Steps`` hand parts on and forget them.  The
    event ``(_WHERE, list)`` asks where it is reading: it fills the list
    with the path's segments (for errors raised below it, in yajl).
    """
    max_depth = limits.max_depth
    max_string = limits.max_string_length
    stack = []  # for each open container, its parent's (top, key, in_list)
    top = _Document(record)  # the container being filled
    key = None  # its current key, when it is an object
    in_list = True  # whether it is an array (or the document)
    while True:
        event, value = yield
        if event == "number":
            if type(value) is not int:
                raise _not_integer(value, _segments(stack, top, key, in_list))
            if in_list:
                top.append(value)
            else:
                top[key] = value
        elif event == "map_key":
            if len(value) > max_string or value in top:  # ("in" may refuse a top-level key itself)
                raise _bad_key(value, stack, top, in_list, max_string)
            key = value
        elif event == "start_array":
            new = [] if 1 < len(stack) < max_depth else _open(False, stack, top, key, in_list, record, max_depth)
            stack.append((top, key, in_list))
            top = new
            in_list = True
        elif event == "end_array" or event == "end_map":
            value = top
            top, key, in_list = stack.pop()
            if in_list:
                top.append(value)
            else:
                top[key] = value
        elif event == "string":
            if len(value) > max_string:
                raise _too_long("a string", _segments(stack, top, key, in_list), max_string)
            if in_list:
                top.append(value)
            else:
                top[key] = value
        elif event == "start_map":
            new = {} if 1 < len(stack) < max_depth else _open(True, stack, top, key, in_list, record, max_depth)
            stack.append((top, key, in_list))
            top = new
            key = None
            in_list = False
        elif event == "boolean" or event == "null":
            if in_list:
                top.append(value)
            else:
                top[key] = value
        elif event is _WHERE:
            value.extend(_segments(stack, top, key, in_list))
        else:
            raise RuntimeError(f"unexpected ijson event {event!r}")


# --- the push parser -------------------------------------------------------------


def _as_bytes(chunk):
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, (bytearray, memoryview)):
        return bytes(chunk)
    if isinstance(chunk, str):
        raise MetricsInputError("The record must be bytes, not text (str): read it in binary mode.")
    raise TypeError(f"a record chunk must be bytes, not {type(chunk).__name__}")


def _first_line(exc):
    """The first line of an ijson error: yajl's reason, without its picture of the input."""
    message = exc.args[0] if exc.args else ""
    if isinstance(message, bytes):  # yajl's picture of the input may be invalid UTF-8
        message = message.decode("utf-8", "replace")
    lines = str(message).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


class RecordParser(ByteSink):
    """Push parser of one run record.

    ``sink`` has the methods ``header(value)``, ``initial_state(value)``,
    ``step(index, value)``, ``final_state(value)`` and ``end()``.  Each part
    goes to the sink as soon as its last byte has been fed, in record
    order; ``index`` counts steps from 0; ``end()`` is called once, by
    ``close()``, when the whole text was a valid record.  Values are plain
    dict, list, str, int, bool and None.

    Bad input, or input beyond ``limits``, raises ``MetricsInputError``
    naming the JSON path; an exception raised by the sink passes through
    unchanged.  After any exception the parser is dead.
    """

    def __init__(self, sink: RecordSink, limits=DEFAULT_LIMITS):
        self._record = _Record(sink)
        self._limits = limits
        self._builder = _build(self._record, limits)
        next(self._builder)
        self._yajl = _backend.basic_parse_basecoro(self._builder)
        self._guard = ByteGuard(limits.max_integer_digits)
        self._piece = max(1, min(_PIECE, limits.max_part_bytes // 16))
        self._head = b""  # the first bytes while they may be a byte-order mark; then None
        self._blank = True  # nothing but whitespace read so far
        self._part_bytes = 0
        self._parts_seen = 0
        self._state = "open"
        self.bound_trailing = False  # see bound_trailing_bytes

    def feed(self, chunk):
        """Read the next bytes of the record; any chunking, down to one byte."""
        self._check_open()
        data = _as_bytes(chunk)
        try:
            if self._head is not None:
                data = self._past_bom(data)
            for start in range(0, len(data), self._piece):
                self._feed_piece(data[start : start + self._piece])
        except BaseException:
            self._state = "dead"
            raise

    def close(self):
        """Mark the end of the input: raises if the record is incomplete, else calls ``sink.end()``."""
        self._check_open()
        try:
            if self._head:
                self._feed_piece(self._head)
            self._head = None
            try:
                self._yajl.close()
            except Exception as exc:
                if self._from_builder(exc):
                    raise
                raise self._end_error(exc) from exc
            self._state = "closed"
            self._record.sink.end()
        except BaseException:
            if self._state == "open":
                self._state = "dead"
            raise

    def bound_trailing_bytes(self):
        """Count the whitespace after the record against max_part_bytes too.

        Not done by default: a file's size bounds it.  A decompressed stream
        calls this, as it may expand without end.
        """
        self.bound_trailing = True

    def _check_open(self):
        if self._state == "dead":
            raise MetricsInputError("The record parser has already failed; it reads no more input.")
        if self._state == "closed":
            raise MetricsInputError("The record parser is closed; it reads no more input.")

    def _past_bom(self, data):
        """The bytes to parse, once the first ones are known not to be a byte-order mark."""
        head = self._head + data
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._head = head
            return b""
        self._head = None
        if head.startswith(_BOM):
            raise MetricsInputError(
                "Malformed JSON at $: the record starts with a UTF-8 byte-order mark, which a JSON text must not have."
            )
        return head

    def _feed_piece(self, piece):
        if self._blank and piece.strip(_WHITESPACE):
            self._blank = False
        safe, problem = self._guard.scan(piece)
        if safe:
            self._send(safe)
        if problem is not None:
            kind, sentence = problem
            raise _error(kind, self._where(), sentence)
        self._count_part_bytes(len(piece))

    def _send(self, data):
        try:
            self._yajl.send(data)
        except Exception as exc:
            if self._from_builder(exc):
                raise
            raise self._input_error(exc) from exc

    def _from_builder(self, exc):
        # An exception raised in the builder (one of its checks, or the
        # sink's own) has ended it and passes unchanged, as does running out
        # of memory; any other comes from ijson or yajl below, about the input.
        return self._builder.gi_frame is None or isinstance(exc, MemoryError)

    def _where(self):
        segments = []
        self._builder.send((_WHERE, segments))
        return segments

    def _input_error(self, exc):
        """The MetricsInputError for an exception raised by ijson or yajl."""
        if isinstance(exc, UnicodeDecodeError):
            return _error("Malformed JSON", self._where(), f"a string is not valid UTF-8 ({exc.reason}).")
        if isinstance(exc, ArithmeticError):  # decimal.InvalidOperation, e.g. 1e999999999999999999999
            return _error(
                "Non-integer number", self._where(), "a number has a fraction or exponent; records hold only integers."
            )
        reason = _first_line(exc)
        if self._record.complete:
            return _error(
                "Malformed JSON", [], f"data follows the end of the record object ({reason}); only whitespace may."
            )
        return _error("Malformed JSON", self._where(), f"the JSON parser reports: {reason}.")

    def _end_error(self, exc):
        """The MetricsInputError for an exception raised at the end of the input."""
        if self._blank:
            return MetricsInputError("$: the record is empty: the input holds no JSON text.")
        if not self._record.complete:
            return MetricsInputError(
                f"{_format_path(self._where())}: the record is truncated: "
                "the input ends here before the record is complete."
            )
        return self._input_error(exc)

    def _count_part_bytes(self, size):
        record = self._record
        if record.complete and not self.bound_trailing:
            return
        # What follows the record (whitespace only) counts like a part
        # (number -1) when bound_trailing is set (decompressed input).
        parts = -1 if record.complete else record.parts
        if parts != self._parts_seen:
            self._parts_seen = parts
            self._part_bytes = size
        else:
            self._part_bytes += size
        limit = self._limits.max_part_bytes
        if self._part_bytes > limit:
            if record.complete:
                raise _error(
                    "Limit exceeded",
                    [],
                    f"more than max_part_bytes={limit} bytes of decompressed input were read after the record.",
                )
            raise _error(
                "Limit exceeded",
                self._where(),
                f"more than max_part_bytes={limit} bytes of input were read for one part of the record.",
            )
