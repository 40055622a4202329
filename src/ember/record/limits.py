"""Resource limits of the record reader, and the limits for one scenario's records (docs/limits.md)."""

import dataclasses

from ..canonical import canonical_json
from ..versions import OBSERVATION_VERSION, SCHEMA_VERSION, SIMULATOR_VERSION

# ijson 3.6 converts an integer token with PyLong_FromString and passes a
# NULL on when that fails, which it does past sys.get_int_max_str_digits()
# (at least 640 when set).  A longer limit could let such a token through.
MAX_INTEGER_DIGITS = 640


@dataclasses.dataclass(frozen=True)
class RecordLimits:
    """Resource limits of the reader; going past one is a ``MetricsInputError``.

    The defaults are far above what a valid record needs and far below what
    would strain memory or time.

    max_depth (32)
        Arrays and objects open at once, the record object counting as 1.
        A valid record needs 7 (``$.steps[i].snapshot.people[j].position``).
    max_string_length (1,048,576)
        Characters in one string or object key.  The longest string of a
        valid record is the 71-character ``scenario_hash``.
    max_integer_digits (40)
        Decimal digits in one number (every digit run of it, for a
        non-integer).  Record integers are below 2**64: at most 20 digits.
        At most 640 (see ``MAX_INTEGER_DIGITS``).
    max_part_bytes (64 MiB)
        Bytes of input read for one part (a step, or the header,
        initial_state or final_state), counted from the end of the previous
        part.  The input is counted in the pieces given to yajl, of at most
        64 KiB and 1/16 of the limit: a piece in which a part ends counts
        towards the next one, so a part may be refused up to one piece
        early or late.  This bounds what yajl buffers for one token and
        what the builder holds for one value.  A step of a valid record is
        a few KB.  ``episode_metrics``, ``MetricsStream`` and
        ``verify_replay`` use a limit sized to the scenario
        (``record_limits`` below, docs/limits.md).
    """

    max_depth: int = 32
    max_string_length: int = 1_048_576
    max_integer_digits: int = 40
    max_part_bytes: int = 64 * 1024 * 1024

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"RecordLimits.{field.name} must be a positive integer, not {value!r}")
        if self.max_integer_digits > MAX_INTEGER_DIGITS:
            raise ValueError(f"RecordLimits.max_integer_digits must be at most {MAX_INTEGER_DIGITS}")


DEFAULT_LIMITS = RecordLimits()


# Reader limits for one scenario's records (docs/limits.md).  The part limit
# is derived from ``largest_part_bytes``, the canonical size of the largest
# part any valid record of the scenario can hold, so that no record the
# simulator writes for a valid scenario is ever refused, however large.
# PART_SLACK leaves room for whitespace and escaping (a pretty-printed
# record), but never more than PART_HEADROOM bytes beyond the canonical
# size, so a hostile part's memory (Python objects take up to ~25 bytes per
# byte read) stays in proportion to what the scenario can really need.
PART_SLACK = 16
PART_HEADROOM = 64 << 20
MIN_PART_BYTES = 1 << 20

# The longest word of each record vocabulary (simulator.md §3, §5; the full
# sets are the checks' ``ACTIONS``, ``OUTCOMES``, ... which Record may not
# import: tests/test_valid_records_within_limits.py checks these are the longest).
WIDEST_ACTION = "north"
WIDEST_OUTCOME = "blocked_boundary"
WIDEST_STATUS = "evacuated"
WIDEST_CAUSE = "entered_fire"
WIDEST_REASON = "all_resolved"


def largest_part_bytes(scenario):
    """Bytes of the largest part any valid record of the compiled ``scenario`` can hold, written canonically.

    The largest part is a step (simulator.md §5): every person at most once
    in ``actions``, ``movements`` and the snapshot's ``people``, and once in
    ``evacuations``, ``casualties`` or ``trapped`` (a person resolved at t
    is not active in s_t); every non-wall cell at most once in
    ``ignitions`` and in ``burning``.  Each entry is measured at its widest,
    with the scenario's own IDs: the longest action, outcome, status, cause
    and exit ID, a cell as wide as a target can be (row -1 or ``rows``), a
    step number as wide as ``max_steps``.  The header, ``initial_state`` and
    ``final_state`` hold less, except a header in a scenario of few people.
    """

    def size(value):
        return len(canonical_json(value))

    grid = scenario.grid
    # A target is origin + action, so a row runs from -1 to ``rows``: the widest of the two.
    cell = [max((-1, grid.rows), key=lambda v: len(str(v))), max((-1, grid.cols), key=lambda v: len(str(v)))]
    t = scenario.max_steps
    step = size(
        {
            "actions": {},
            "casualties": [],
            "evacuations": [],
            "ignitions": [],
            "movements": [],
            "snapshot": {
                "burning": [],
                "people": [],
                "step": t,
                "terminated": False,
                "termination_reason": WIDEST_REASON,
                "trapped": [],
            },
            "step": t,
        }
    )
    exit_id = max(scenario.exit_ids, key=len)
    per_length = {}
    for length in {len(person_id) for person_id in scenario.person_ids}:
        pid = "x" * length  # IDs are ASCII (simulator.md §1): their canonical size is their length + 2
        per_length[length] = (
            size({pid: WIDEST_ACTION})
            - 1  # '"id":"north",' is the object less its braces, plus a comma
            + size({"origin": cell, "outcome": WIDEST_OUTCOME, "person_id": pid, "target": cell})
            + 1
            + max(
                size({"exit_id": exit_id, "person_id": pid}),
                size({"cause": WIDEST_CAUSE, "person_id": pid}),
                size(pid),
            )
            + 1
            + size({"person_id": pid, "position": cell, "status": WIDEST_STATUS})
            + 1
        )
    step += sum(per_length[len(person_id)] for person_id in scenario.person_ids)
    step += 2 * (size(cell) + 1) * grid.open.count(1)
    header = size(
        {
            "observation_version": OBSERVATION_VERSION,
            "scenario_hash": scenario.hash,
            "scenario_id": scenario.scenario_id,
            "schema_version": SCHEMA_VERSION,
            "seed": 2**64 - 1,
            "simulator_version": SIMULATOR_VERSION,
        }
    )
    return max(step, header)


def record_limits(scenario):
    """The reader ``RecordLimits`` for records of a compiled scenario."""
    largest = largest_part_bytes(scenario)
    part = max(MIN_PART_BYTES, min(PART_SLACK * largest, largest + PART_HEADROOM))
    return RecordLimits(
        max_depth=DEFAULT_LIMITS.max_depth,
        max_string_length=DEFAULT_LIMITS.max_string_length,
        max_integer_digits=DEFAULT_LIMITS.max_integer_digits,
        max_part_bytes=part,
    )
