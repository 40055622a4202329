"""Replayed steps (docs/decisions.md, "Replayed steps"): a step byte-identical
to the replaying simulator's own step skips the stage-2 rules, which the
simulator's output obeys by construction.  These tests show that it does
(every check passes on the simulator's output), that skipping changes no
result (identical metrics, type-strictly, with and without the fast path),
and that the checks' state stays right for strict steps after replayed ones.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings

import ember
from ember.engine.core import EpisodeEngine
from ember.record.reader import RecordParser
from ember.scenario import compile_scenario
from ember.sim.policies import make_policy

from helpers.random_episodes import episodes
from helpers.records import encode, parts, record_bytes, scripted
from helpers.replayed import CUT_OFF, CUT_OFF_RECORD, replayed_flags, same_typed


def strict_checks_pass(scenario, data):
    """Stages 1-2 over every step through the strict reader, no replay: raises on a defect."""
    engine = EpisodeEngine(compile_scenario(scenario), replay=False)
    parser = RecordParser(engine)
    parser.feed(data)
    parser.close()
    return engine.result


def builtin_record(name, policy, seed, max_steps):
    scenario = ember.load_scenario(f"builtin:{name}")
    scenario["termination"]["max_steps"] = max_steps
    sim = ember.Simulator(scenario, seed)
    return scenario, record_bytes(scenario, make_policy(policy, sim.scenario, seed), seed)


BUILTIN_CASES = [
    ("small-room", "random", 3, 200),
    ("office", "greedy", 1, 500),
    ("bottleneck", "random", 2, 300),
    ("long-horizon", "random", 5, 300),
    ("hall", "greedy", 0, 5),
]


@pytest.mark.parametrize("name, policy, seed, max_steps", BUILTIN_CASES)
def test_every_stage2_check_passes_on_the_simulators_output(name, policy, seed, max_steps):
    scenario, data = builtin_record(name, policy, seed, max_steps)
    assert strict_checks_pass(scenario, data) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes())
def test_every_stage2_check_passes_on_random_episodes(episode):
    scenario, seed, plan = episode
    ids = sorted(p["person_id"] for p in scenario["people"])
    data = record_bytes(scenario, scripted([dict(zip(ids, row)) for row in plan]), seed)
    assert strict_checks_pass(scenario, data) is not None


@pytest.mark.parametrize("name, policy, seed, max_steps", BUILTIN_CASES)
def test_fast_path_gives_the_metrics_of_the_strict_path(monkeypatch, name, policy, seed, max_steps):
    scenario, data = builtin_record(name, policy, seed, max_steps)
    strict = ember.episode_metrics(scenario, json.dumps(json.loads(data), indent=1).encode()).to_dict()
    flags = replayed_flags(monkeypatch)
    fast = ember.episode_metrics(scenario, data).to_dict()
    assert flags and all(flags)  # every step took the fast path, so every stage-2 rule was skipped
    assert same_typed(fast, strict)
    assert same_typed(fast, strict_checks_pass(scenario, data).to_dict())


def test_the_cut_off_episode_is_what_the_tests_below_need():
    steps = CUT_OFF_RECORD["steps"]
    assert [s["snapshot"]["trapped"] for s in steps] == [["A"]] * 4
    assert all(s["ignitions"] for s in steps[:3])


def error_of(scenario, data):
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(scenario, data)
    return str(info.value)


@pytest.mark.parametrize("t", [2, 3, 4])
def test_a_stage2_defect_after_replayed_steps_is_reported_as_by_the_strict_path(monkeypatch, t):
    # The trapped set of step t is recomputed from reachability that the
    # replayed steps before it (with their ignitions) must have kept current.
    record = json.loads(json.dumps(CUT_OFF_RECORD))
    record["steps"][t - 1]["snapshot"]["trapped"] = []
    flags = replayed_flags(monkeypatch)
    message = error_of(CUT_OFF, encode(record))
    assert flags[: t - 1] == [True] * (t - 1) and flags[t - 1] is False
    assert message == error_of(CUT_OFF, json.dumps(record, indent=1).encode())
    assert f"$.steps[{t - 1}].snapshot.trapped: expected the trapped set ['A']" in message


def test_a_record_leaving_the_fast_path_midway_measures_the_same(monkeypatch):
    scenario, data = builtin_record("office", "random", 4, 120)
    lines = data.split(b"\n")
    lines[60] = lines[60].replace(b'{"actions":', b'{ "actions":', 1)  # still valid JSON, no longer canonical
    flags = replayed_flags(monkeypatch)
    mixed = ember.episode_metrics(scenario, b"\n".join(lines)).to_dict()
    assert True in flags and False in flags
    assert same_typed(mixed, ember.episode_metrics(scenario, data).to_dict())


def test_a_replay_mismatch_still_yields_to_a_later_structural_defect():
    # simulator.md §7: step 1's outcome is forged (the boundary blocked A,
    # not a wall: only replay can tell), and the trapped set of step 4 is a
    # stage-2 defect, so it is the error; no replayed step may hide it.
    record = parts(record_bytes(CUT_OFF, scripted([{"A": "east"}])))
    assert record["steps"][0]["movements"][0]["outcome"] == "blocked_boundary"
    record["steps"][0]["movements"][0]["outcome"] = "blocked_wall"
    assert "replay" in error_of(CUT_OFF, encode(record))
    record["steps"][3]["snapshot"]["trapped"] = []
    message = error_of(CUT_OFF, encode(record))
    assert "replay" not in message and "$.steps[3].snapshot.trapped" in message
