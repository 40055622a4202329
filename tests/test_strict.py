"""The test helpers themselves: a comparison that let 1 == 1.0 == True through would hide type defects."""

import pytest

from helpers.strict import Hang, assert_same_json, json_difference, no_hang


@pytest.mark.parametrize("a, b", [(1, 1.0), (1, True), (0, False), (1.0, True), (None, 0), ([1], (1,)), ("1", 1)])
def test_same_json_tells_types_apart(a, b):
    assert a == b or a != b  # whatever == says
    with pytest.raises(AssertionError):
        assert_same_json(a, b)
    with pytest.raises(AssertionError):
        assert_same_json({"x": [{"y": a}]}, {"x": [{"y": b}]})


def test_same_json_names_the_first_difference():
    assert json_difference({"s": {"n": 1, "r": 0.5}}, {"s": {"n": 1.0, "r": 0.5}}) == "$.s.n: int 1 is not float 1.0"
    assert json_difference({"a": 1}, {"b": 1}) == "$: keys differ (missing ['b'], unexpected ['a'])"
    assert json_difference([1, 2], [1]) == "$: 2 items, not 1"
    assert_same_json({"a": 1, "b": [0.5, None]}, {"b": [0.5, None], "a": 1})  # key order is not significant


def test_no_hang_stops_a_hang_and_nothing_else():
    with no_hang(5):
        pass
    with pytest.raises(Hang):
        with no_hang(0.05):
            while True:
                pass
