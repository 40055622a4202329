"""Strict JSON (simulator.md §1): no duplicate key, no NaN or infinity; and a value shown in a message.

The readers of a results directory parse every file with ``strict_json``; an agent's answers are
parsed with its ``object_without_duplicates`` (the agent protocol reads its own line's other rules);
the scenario reader parses with ``loads_without_duplicates`` and its own number rules (integers
only), asking where a repeated key is.
"""

import json
import math

_SHOWN_CHARS = 100


class DuplicateKey(ValueError):
    """A ``key`` repeated in one object; ``path`` is where, when asked: its keys and indices from the top."""

    def __init__(self, key, path=None):
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.path = path


def object_without_duplicates(pairs):
    """``json.loads``'s ``object_pairs_hook``: the object as a dict; a repeated key is a ``DuplicateKey``."""
    result = dict(pairs)  # at C speed; the slow search only when a key repeated
    if len(result) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


class _Pairs(list):
    """An object's (key, value) pairs, kept as parsed so that a repeated key can be found where it is."""


def _first_duplicate(value, trail=None):
    """(key, trail) of the first repeated key in document order (a member's value before the next key), or None.

    ``trail`` is ``(parent trail, key or index)``: a path is made only for
    the key found, never one per value (quadratic in the nesting depth).
    """
    if isinstance(value, _Pairs):
        seen = set()
        for key, item in value:
            if key in seen:
                return key, (trail, key)
            seen.add(key)
            found = _first_duplicate(item, (trail, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _first_duplicate(item, (trail, i))
            if found is not None:
                return found
    return None


def _segments(trail):
    segments = []
    while trail is not None:
        trail, segment = trail
        segments.append(segment)
    return tuple(reversed(segments))


def loads_without_duplicates(text, *, where=False, **hooks):
    """``json.loads(text, **hooks)`` of a str, where a key repeated in an object is a ``DuplicateKey``.

    With ``where``, the error's ``path`` names the first repeated key in
    document order: only a text refused for one is parsed a second time,
    keeping each object's pairs (a text that is not JSON after the
    repeated key raises that ``json.JSONDecodeError`` instead).
    """
    try:
        return json.loads(text, object_pairs_hook=object_without_duplicates, **hooks)
    except DuplicateKey:
        if not where:
            raise
    key, trail = _first_duplicate(json.loads(text, object_pairs_hook=_Pairs, **hooks))
    raise DuplicateKey(key, _segments(trail))


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:_SHOWN_CHARS]} is out of range")
    return value


def strict_json(data):
    """Parse one JSON text (bytes, UTF-8) strictly: no duplicate keys, NaN or infinities.

    Raises ``ValueError`` with the parser's reason.
    """
    try:
        text = data.decode("utf-8")
        return loads_without_duplicates(text, parse_constant=_no_constants, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def shown(value):
    """A short JSON rendering of ``value`` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
