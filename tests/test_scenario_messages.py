"""Scenario error messages that must say what went wrong."""

import pytest

import ember

from helpers.scenarios import make_scenario


@pytest.mark.parametrize("probability", ["1/0", "0/0", "7/000"])
def test_spread_probability_zero_denominator_says_d_must_be_at_least_1(probability):
    scenario = make_scenario(1, 2, people={"a": (0, 0)}, exits={"x": (0, 1)}, p=probability)
    with pytest.raises(ember.ScenarioError) as caught:
        ember.load_scenario(scenario)
    assert str(caught.value) == (
        f'$.fire.spread_probability: the denominator D must be at least 1 (expected "N/D" with 0 <= N <= D <= 2^32), '
        f"got {probability!r}."
    )


def test_spread_probability_leading_zeros_says_so():
    scenario = make_scenario(1, 2, people={"a": (0, 0)}, exits={"x": (0, 1)}, p="01/2")
    with pytest.raises(ember.ScenarioError, match=r"written without leading zeros, got '01/2'\.$"):
        ember.load_scenario(scenario)
