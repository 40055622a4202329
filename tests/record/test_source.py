"""Record sources (ember.record.source): paths, streams and byte views, refused with a one-line error."""

import io

import pytest

import ember
from ember.canonical import canonical_json

from helpers.hostile_input import LIMITED, LIMITED_RECORD
from helpers.strict import assert_same_json


def test_regression_nul_in_a_path_raised_value_error():
    # open() raises ValueError, not OSError, for a path with a NUL character.
    with pytest.raises(ember.MetricsInputError, match=r"^\$: cannot read the record file"):
        ember.episode_metrics(LIMITED, "record\x00.json")
    with pytest.raises(ember.ScenarioError, match=r"^\$: cannot read the scenario file"):
        ember.load_scenario("scenario\x00.json")
    with pytest.raises(ember.ScenarioError, match=r"^\$: cannot read the scenario file"):
        ember.load_scenario("\ud800.json")  # not encodable as a file name


class Reads:
    """A file-like object whose read gives ``result`` (or raises it)."""

    def __init__(self, result):
        self.result = result

    def read(self, size=-1):
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def test_regression_closed_or_odd_streams_raised_other_errors():
    # Reading a closed file raises ValueError; a read() that gives neither
    # bytes nor str went on to the parser.
    closed = io.BytesIO(LIMITED_RECORD)
    closed.close()
    with pytest.raises(
        ember.MetricsInputError, match=r"^\$: reading the record failed: I/O operation on closed file\.$"
    ):
        ember.episode_metrics(LIMITED, closed)
    closed = io.BytesIO(canonical_json(LIMITED))
    closed.close()
    with pytest.raises(ember.ScenarioError, match=r"^\$: reading the scenario file failed"):
        ember.load_scenario(closed)
    for odd in ([1, 2], 5, None, OSError(5, "Input/output error"), ValueError("odd")):
        with pytest.raises(ember.MetricsInputError, match=r"^\$: reading the record"):
            ember.episode_metrics(LIMITED, Reads(odd))


def test_regression_strided_memoryview_raised_type_error():
    # memoryview.cast("B") refuses a view that is not C-contiguous.
    doubled = bytes(b for byte in LIMITED_RECORD for b in (byte, 0))
    view = memoryview(doubled)[::2]
    assert_same_json(
        ember.episode_metrics(LIMITED, view).to_dict(), ember.episode_metrics(LIMITED, LIMITED_RECORD).to_dict()
    )
