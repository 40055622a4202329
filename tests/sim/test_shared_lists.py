"""``Simulator(shared_lists=True)`` gives the values of the default simulator, step by step.

A shared-lists simulator hands out its own burning list and the snapshot
entries of people who did not change, for callers that never modify what
they get (the replay check, ``measure_run`` with a built-in policy).  Its
records and observations must be byte-identical to the default one's, and
the greedy and planner policies must choose the same actions from them
(``shared_observations=True``) as from fresh observations.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember import Simulator, load_scenario
from ember.canonical import canonical_json
from ember.engine.run import measure_run
from ember.sim.policies import POLICY_NAMES, is_builtin, make_policy, stay_policy

from helpers.floors import scenarios


def trace(scenario, policy_name, seed, shared):
    """Every observation's and step's canonical bytes, and the final state's, of one episode."""
    sim = Simulator(scenario, seed, shared_lists=shared)
    policy = make_policy(policy_name, sim.scenario, seed, shared_observations=shared)
    out = [canonical_json(sim.header), canonical_json(sim.initial_state)]
    while not sim.terminated:
        observation = sim.observe()
        out.append(canonical_json(observation))
        out.append(canonical_json(sim.step(policy(observation))))
    out.append(canonical_json(sim.final_state))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(POLICY_NAMES), st.integers(0, 2**64 - 1))
def test_shared_lists_give_the_same_bytes_on_random_floors(scenario, policy_name, seed):
    assert trace(scenario, policy_name, seed, True) == trace(scenario, policy_name, seed, False)


@pytest.mark.parametrize(
    "name, policy_name, seed, max_steps",
    [
        ("ember-v1/medium-hall-casualty", "greedy", 1, 60),
        ("ember-v1/medium-multi-exit-block", "planner", 2, 60),
        ("ember-v1/small-office-casualty", "random", 3, 80),
        ("hall", "greedy", 4, 30),
    ],
)
def test_shared_lists_give_the_same_bytes_on_builtin_floors(name, policy_name, seed, max_steps):
    scenario = load_scenario(f"builtin:{name}")
    scenario["termination"]["max_steps"] = max_steps
    assert trace(scenario, policy_name, seed, True) == trace(scenario, policy_name, seed, False)


def test_measure_run_with_a_policy_name_equals_measure_run_with_the_policy_object():
    # A name gets the shared-lists simulator; a callable gets fresh lists (it may modify them).
    scenario = load_scenario("builtin:ember-v1/medium-hall-casualty")
    for name in ("greedy", "planner"):
        by_name = measure_run(scenario, name, 5)
        by_object = measure_run(scenario, make_policy(name, scenario, 5), 5)
        metrics = [getattr(m, "metrics", m).to_dict() for m in (by_name, by_object)]
        assert canonical_json(metrics[0]) == canonical_json(metrics[1])


def test_a_shared_list_handed_out_is_never_changed_afterwards():
    sim = Simulator(load_scenario("builtin:hall"), 0, shared_lists=True)
    policy = make_policy("random", sim.scenario, 0)
    kept = []
    for _ in range(12):
        step = sim.step(policy(sim.observe()))
        kept.append((step, canonical_json(step)))
    for step, text in kept:
        assert canonical_json(step) == text


def test_built_in_policies_are_known_and_other_callables_are_not():
    scenario = load_scenario("builtin:small-room")
    assert all(is_builtin(name) for name in POLICY_NAMES)
    assert all(is_builtin(make_policy(name, scenario, 0)) for name in POLICY_NAMES)
    assert is_builtin(stay_policy)
    assert not is_builtin(lambda observation: stay_policy(observation))
