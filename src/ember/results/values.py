"""The value checks every schema of a results directory is made of (campaign.md §4, ranking.md §1).

Each check returns the value it was given or raises ``Invalid`` with the
reason: a JSON path, what was expected, what was found.  The reader adds
the file and line and raises ``ResultsError``.  No value is converted or
trusted before it is checked: ``1``, ``1.0`` and ``true`` are three
different things.
"""

import re

from ..scenario import ID_PATTERN
from ..strict_json import shown

#: Integers read from rows and campaign.json stay below this (as seeds do), so
#: that every sum converts to a finite float.
MAX_INTEGER = 2**63
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
SCENARIO_HASH = re.compile(r"sha256:[0-9a-f]{64}")


class Invalid(Exception):  # noqa: N818 (a signal inside the reader, never raised out of it)
    """A reason found while checking a value; the reader adds the file and line (``ResultsError``)."""


def expect(fits, value, path, expected):
    """``value`` when it ``fits``, else the reason: ``path``, what was ``expected``, what it got."""
    if not fits:
        raise Invalid(f"{path}: expected {expected}, got {shown(value)}")
    return value


def integer(value, path, minimum=0):
    fits = type(value) is int and minimum <= value < MAX_INTEGER
    return expect(fits, value, path, f"an integer {minimum} <= n < 2^63")


def string(value, path):
    return expect(type(value) is str, value, path, "a string")


def identifier(value, path):
    """An ID of simulator.md §1 (campaign, scenario and policy names are IDs, campaign.md §1-2)."""
    fits = type(value) is str and ID_PATTERN.fullmatch(value)
    return expect(fits, value, path, "an ID ([A-Za-z0-9][A-Za-z0-9._-]{0,63})")


def json_object(value, path):
    return expect(type(value) is dict, value, path, "an object")


def non_empty_array(value, path):
    return expect(type(value) is list and value, value, path, "a non-empty array")


def member(mapping, key, path):
    if key not in mapping:
        raise Invalid(f"{path}: missing key {key!r}")
    return mapping[key]


def no_other_keys(mapping, keys, path):
    unknown = sorted(set(mapping) - set(keys))
    if unknown:
        raise Invalid(f"{path}: unknown key {shown(unknown[0])} (expected only {', '.join(keys)})")


def relative_path(value, path):
    """A record path as a row holds it: relative (to RESULTS_DIR or the campaign folder), non-empty."""
    fits = type(value) is str and value and not value.startswith("/") and "\0" not in value
    return expect(fits, value, path, "a relative path")
