"""Strict JSON (simulator.md §1): no duplicate key, no NaN or infinity; and a value shown in a message.

The readers of a results directory parse every file with ``strict_json``; an agent's answers are
parsed with its ``object_without_duplicates`` (the agent protocol reads its own line's other rules).
"""

import json
import math

_SHOWN_CHARS = 100


def object_without_duplicates(pairs):
    """``json.loads``'s ``object_pairs_hook``: the object as a dict; a repeated key is a ``ValueError``."""
    result = dict(pairs)  # at C speed; the slow search only when a key repeated
    if len(result) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


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
        return json.loads(
            text,
            object_pairs_hook=object_without_duplicates,
            parse_constant=_no_constants,
            parse_float=_finite_float,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def shown(value):
    """A short JSON rendering of ``value`` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
