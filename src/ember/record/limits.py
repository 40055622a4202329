"""Resource limits of the record reader, and the limits for one scenario's records (docs/limits.md)."""

import dataclasses

# ijson 3.6 converts an integer token with PyLong_FromString and passes a
# NULL on when that fails, which it does past sys.get_int_max_str_digits()
# (at least 640 when set).  A longer limit could let such a token through.
MAX_INTEGER_DIGITS = 640


@dataclasses.dataclass(frozen=True)
class Limits:
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
                raise ValueError(f"Limits.{field.name} must be a positive integer, not {value!r}")
        if self.max_integer_digits > MAX_INTEGER_DIGITS:
            raise ValueError(f"Limits.max_integer_digits must be at most {MAX_INTEGER_DIGITS}")


DEFAULT_LIMITS = Limits()


# Reader limits for one scenario's records (docs/limits.md).  A part (a step,
# header, initial_state or final_state) of a valid record holds at most about
# PART_BYTES_PER_PERSON bytes per person and PART_BYTES_PER_CELL per non-wall
# cell (a cell may be listed in both ignitions and burning), written
# canonically with 64-character IDs.  PART_SLACK leaves room for any
# reasonable whitespace and escaping.  The part limit keeps a hostile part's
# memory (Python objects take up to ~25 bytes per byte read) in proportion
# to the scenario rather than at the reader's 64 MiB default.
PART_BYTES_PER_PERSON = 1024
PART_BYTES_PER_CELL = 48
PART_BYTES_BASE = 4096
PART_SLACK = 16
MIN_PART_BYTES = 1 << 20


def record_limits(scenario):
    """The reader ``Limits`` for records of a compiled scenario."""
    bound = (
        PART_BYTES_BASE
        + PART_BYTES_PER_PERSON * len(scenario.person_ids)
        + PART_BYTES_PER_CELL * scenario.grid.open.count(1)
    )
    part = min(DEFAULT_LIMITS.max_part_bytes, max(MIN_PART_BYTES, PART_SLACK * bound))
    return Limits(
        max_depth=DEFAULT_LIMITS.max_depth,
        max_string_length=DEFAULT_LIMITS.max_string_length,
        max_integer_digits=DEFAULT_LIMITS.max_integer_digits,
        max_part_bytes=part,
    )
