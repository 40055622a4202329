"""Canonical JSON (simulator.md §1) and the canonical record framing (§5)."""

import json

_encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json_reference(value) -> bytes:
    """simulator.md §1 to the letter: the definition every fast path must match."""
    return _encoder.encode(value).encode("utf-8")


def _fast_path():
    """orjson's ``(dumps, loads)`` (the optional speed-up), imported at the first call that needs it, not with
    this module: loading it costs a process tens of milliseconds of CPU, and a process that never encodes (a
    python policy's, which imports the scenario module) should not pay them.  Without orjson: the reference
    encoder and ``json.loads``."""
    global _dumps, _loads, _SORTED
    try:
        import orjson  # optional speed-up; the pure-Python encoder above is the definition
    except ImportError:  # pragma: no cover - exercised when the 'fast' extra is absent
        _dumps, _loads = _reference_dumps, json.loads
    else:
        _dumps, _loads, _SORTED = orjson.dumps, orjson.loads, orjson.OPT_SORT_KEYS
    return _dumps, _loads


def _reference_dumps(value, option=None):
    return canonical_json_reference(value)


def _first_dumps(value, option=None):
    return _fast_path()[0](value, option=_SORTED)


def _first_loads(data):
    return _fast_path()[1](data)


_dumps, _loads = _first_dumps, _first_loads
_SORTED = None  # orjson.OPT_SORT_KEYS once loaded


def canonical_json(value) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, no spaces, UTF-8.

    orjson emits the same bytes as the reference for the values records
    hold (str keys, ASCII IDs, integers within 64 bits, lists, bools,
    null; tests/test_canonical.py proves it by property).  Anything
    outside that domain (a huge integer, a lone surrogate, a non-str
    key) goes to the reference encoder.
    """
    try:
        return _dumps(value, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError derives from TypeError
        return canonical_json_reference(value)


def canonical_copy(value):
    """``value`` through its canonical bytes and back (an exact deep copy of checked JSON data): by orjson once
    this process has loaded it, else by the reference encoder and ``json.loads`` (the same bytes), so that a
    process that only reads a scenario (a python policy's) never loads orjson for it."""
    if _dumps is _first_dumps:
        return json.loads(canonical_json_reference(value))
    return json.loads(canonical_json(value))


def parse_json(data):
    """A JSON text's value: orjson's parser when installed (the fast path's actions objects)."""
    return _loads(data)


# The record framing of simulator.md §5: one part per line.
RECORD_HEAD = b'{"header":'
AFTER_HEADER = b',\n"initial_state":'
AFTER_INITIAL = b',\n"steps":[\n'
BETWEEN_STEPS = b",\n"
AFTER_STEPS = b'\n],\n"final_state":'
RECORD_TAIL = b"}\n"

# How the other first lines and a step line of a canonical record start
# (the canonical-line fast path reads records by them; the header line
# starts with ``RECORD_HEAD``).  A step's keys are sorted, so its line
# starts with its actions object, which nests nothing.
INITIAL_LINE_START = AFTER_HEADER[len(b",\n") :]
STEPS_LINE = AFTER_INITIAL[len(b",\n") :]
STEP_LINE_START = b'{"actions":{'


def canonical_record(header, initial_state, steps, final_state) -> bytes:
    """The whole canonical record in memory (tests and small records only)."""
    return (
        RECORD_HEAD
        + canonical_json(header)
        + AFTER_HEADER
        + canonical_json(initial_state)
        + AFTER_INITIAL
        + BETWEEN_STEPS.join(canonical_json(step) for step in steps)
        + AFTER_STEPS
        + canonical_json(final_state)
        + RECORD_TAIL
    )


# Foreign text (an agent's or a policy's words) is shown on terminals and pages: the controls
# that move a cursor, ring a bell or reorder what follows are written as escapes (isolation.md §3).
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES.update({code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def escape_controls(text):
    """``text`` with the C0 controls, DEL and the C1 controls as ``\\xNN``, and U+2028, U+2029,
    U+202A–U+202E and U+2066–U+2069 as ``\\uNNNN`` (isolation.md §3); anything else unchanged."""
    return text.translate(_ESCAPES)


def one_line(text):
    """``text`` (any object: its ``str``) with every run of whitespace, newlines too, made one space: a
    message fit for one line of stderr, a row or a log."""
    return " ".join(str(text).split())


def split_module_name(text):
    """``MODULE:NAME`` (a python policy's source, campaign.md §2) as ``(MODULE, NAME)``, split at the last
    colon; either is empty when ``text`` is not of that form."""
    module, _, name = text.rpartition(":")
    return module, name
