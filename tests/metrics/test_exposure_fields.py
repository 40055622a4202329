"""The fire-exposure field (metrics.md §8) both ways it is kept, against a brute-force reading of the record.

``FireExposure`` keeps Manhattan distances on small grids lowered in plain
Python or, where numpy is loaded, by numpy's minima, and by a numpy
distance transform from ``TRANSFORM_MIN_CELLS`` cells on: each must give
the histograms that the minimum of |dr| + |dc| over each snapshot's
burning cells gives, for every active person in every snapshot.
"""

import json
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
import ember.engine.core
import ember.metrics.exposure as exposure_module
import ember.sim.policies
from ember.canonical import canonical_json
from ember.engine.run import measure_run

from helpers.floors import scenarios


def brute_histograms(scenario, seed, policy):
    """(histogram, per-person histograms) read from the record, by brute force."""
    sim = ember.Simulator(scenario, seed)
    policy = ember.sim.policies.make_policy(policy, sim.scenario, seed) if isinstance(policy, str) else policy
    ids = sorted(p["person_id"] for p in scenario["people"])
    histogram, personal = {}, {pid: {} for pid in ids}

    def tally(snapshot):
        fire = snapshot["burning"]
        for person in snapshot["people"]:
            if person["status"] != "active" or not fire:
                continue
            r, c = person["position"]
            d = min(abs(r - fr) + abs(c - fc) for fr, fc in fire)
            histogram[d] = histogram.get(d, 0) + 1
            personal[person["person_id"]][d] = personal[person["person_id"]].get(d, 0) + 1

    tally(sim.initial_state)
    while not sim.terminated:
        tally(sim.step(policy(sim.observe()))["snapshot"])
    return histogram, personal


def measured(scenario, seed, policy):
    result = measure_run(scenario, policy, seed)
    return getattr(result, "metrics", result).to_dict()


def check(scenario, seed, policy):
    histogram, personal = brute_histograms(scenario, seed, policy)
    metrics = measured(scenario, seed, policy)
    assert metrics["fire_exposure"]["distance_histogram"] == {str(d): histogram[d] for d in sorted(histogram)}
    assert sorted(metrics["people"]) == sorted(personal)
    for pid, person in metrics["people"].items():
        mine = personal[pid]
        assert person["min_fire_distance"] == (min(mine) if mine else None)
        assert person["fire_exposure"] == float(sum((Fraction(n, d) for d, n in mine.items()), Fraction(0)))
    return metrics


SMALL_FIELDS = {
    "lowered": exposure_module.LoweredField,
    "kernel": lambda grid: exposure_module.KernelField(grid, np),
}


# Every grid by the transform, or every grid by one of the small grids' fields.
@pytest.mark.parametrize(("transform_from", "small"), [(1, "lowered"), (10**9, "lowered"), (10**9, "kernel")])
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios(), seed=st.integers(0, 2**64 - 1))
def test_every_field_gives_the_brute_force_histograms(monkeypatch, transform_from, small, scenario, seed):
    monkeypatch.setattr(exposure_module, "TRANSFORM_MIN_CELLS", transform_from)
    monkeypatch.setattr(exposure_module, "small_field", SMALL_FIELDS[small])
    check(scenario, seed, "random")


def test_a_small_grid_takes_numpy_s_minima_only_where_numpy_is_loaded(monkeypatch):
    grid = ember.scenario.compile_scenario(ember.load_scenario("builtin:office")).grid
    assert isinstance(exposure_module.small_field(grid), exposure_module.KernelField)  # this process has numpy
    monkeypatch.delitem(sys.modules, "numpy")
    assert isinstance(exposure_module.small_field(grid), exposure_module.LoweredField)


def test_both_fields_give_the_same_metrics_on_a_large_floor(monkeypatch):
    scenario = ember.load_scenario("builtin:ember-v1/medium-hall-casualty")
    scenario["termination"]["max_steps"] = 80
    results = []
    for transform_from in (1, 10**9):
        monkeypatch.setattr(exposure_module, "TRANSFORM_MIN_CELLS", transform_from)
        results.append(canonical_json(check(scenario, 2, "greedy")))
    assert results[0] == results[1]


def test_the_large_tier_takes_the_numpy_field_and_small_floors_the_bfs():
    compiled = ember.scenario.compile_scenario(ember.load_scenario("builtin:ember-v1/large-hall-casualty"))
    engine = ember.engine.core.EpisodeEngine(compiled, replay=False)
    sim = ember.Simulator(compiled, 0)
    engine.header(sim.header)
    engine.initial_state(json.loads(canonical_json(sim.initial_state)))
    assert isinstance(engine.exposure.field, exposure_module.TransformField)
    small = ember.scenario.compile_scenario(ember.load_scenario("builtin:small-room"))
    assert small.grid.size < exposure_module.TRANSFORM_MIN_CELLS
