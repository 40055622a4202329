"""Canonical JSON (simulator.md §1) and the canonical record framing (§5)."""

import json

_encoder = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, no spaces, UTF-8."""
    return _encoder.encode(value).encode("utf-8")


# The record framing of simulator.md §5: one part per line.
RECORD_HEAD = b'{"header":'
AFTER_HEADER = b',\n"initial_state":'
AFTER_INITIAL = b',\n"steps":[\n'
BETWEEN_STEPS = b",\n"
AFTER_STEPS = b'\n],\n"final_state":'
RECORD_TAIL = b"}\n"


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
