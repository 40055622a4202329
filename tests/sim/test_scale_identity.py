"""Records, observations and metrics of the scale work are those of the code before it.

The digests below were computed by the code of commit 2b1401f (before
the scale work) with ``record_digest`` and ``metrics_digest`` as written here:
the planner (which tests/test_sim_identity.py does not cover) on every
small and medium ember-v1 floor, and the large tier with the planner,
greedy and random, cut to a few dozen steps; the metrics of measure_run
(whose exposure field is numpy's on these floors) on four episodes.
"""

import hashlib

import pytest

from ember import Simulator, load_scenario
from ember.canonical import (
    AFTER_HEADER,
    AFTER_INITIAL,
    AFTER_STEPS,
    BETWEEN_STEPS,
    RECORD_HEAD,
    RECORD_TAIL,
    canonical_json,
)
from ember.engine.run import measure_run
from ember.sim.policies import make_policy


def scenario_for(name, max_steps):
    scenario = load_scenario(f"builtin:{name}")
    if max_steps:
        scenario["termination"]["max_steps"] = max_steps
    return scenario


def record_digest(name, policy_name, seed, max_steps):
    """SHA-256 of the record bytes and of every observation, and the step count."""
    scenario = scenario_for(name, max_steps)
    sim = Simulator(scenario, seed)
    policy = make_policy(policy_name, sim.scenario, seed)
    record, observations = hashlib.sha256(), hashlib.sha256()
    record.update(RECORD_HEAD + canonical_json(sim.header) + AFTER_HEADER)
    record.update(canonical_json(sim.initial_state) + AFTER_INITIAL)
    lines = []
    while not sim.terminated:
        observation = sim.observe()
        observations.update(canonical_json(observation) + b"\n")
        lines.append(canonical_json(sim.step(policy(observation))))
    record.update(BETWEEN_STEPS.join(lines) + AFTER_STEPS + canonical_json(sim.final_state) + RECORD_TAIL)
    return f"{record.hexdigest()[:32]} {observations.hexdigest()[:32]} {len(lines)}"


def metrics_digest(name, policy_name, seed, max_steps):
    result = measure_run(scenario_for(name, max_steps), policy_name, seed)
    metrics = getattr(result, "metrics", result)  # measure_run may return a MeasuredRun
    return hashlib.sha256(canonical_json(metrics.to_dict())).hexdigest()[:32]


RECORDS = {  # (scenario, policy, seed, max_steps or None): record, observations, steps
    (
        "ember-v1/small-office-casualty",
        "planner",
        1,
        None,
    ): "b6dffa65912da6e1ec4a2f764076fe89 22b90f1fce6da6d3bf3afd734ffbade8 145",
    (
        "ember-v1/small-office-block",
        "planner",
        1,
        None,
    ): "a8995f84fec3e668550012d395c3ba18 22b90f1fce6da6d3bf3afd734ffbade8 145",
    (
        "ember-v1/small-hall-casualty",
        "planner",
        1,
        None,
    ): "8a7842aa6447dcd461b1ceec6a53016e b168f0b889b6059209896c703c33133e 49",
    (
        "ember-v1/small-hall-block",
        "planner",
        1,
        None,
    ): "548eb82692e20ef731bed8cabf29347d b168f0b889b6059209896c703c33133e 49",
    (
        "ember-v1/small-bottleneck-casualty",
        "planner",
        1,
        None,
    ): "cef29c6141e9b12211160dd02f303d3e 7978bcf5d8457ca2f46122e580a26cd7 50",
    (
        "ember-v1/small-bottleneck-block",
        "planner",
        1,
        None,
    ): "aeb9417619de88a5d2a37f19e7ad7f8b 7978bcf5d8457ca2f46122e580a26cd7 50",
    (
        "ember-v1/small-multi-exit-casualty",
        "planner",
        1,
        None,
    ): "5c1f8e3f7cc77ff0bf3be1f4857e651a 7feb6061884bde886c31750edf5d18f7 33",
    (
        "ember-v1/small-multi-exit-block",
        "planner",
        1,
        None,
    ): "7f9af355aff04f5cd81fa12bac7fe0a6 7feb6061884bde886c31750edf5d18f7 33",
    (
        "ember-v1/medium-office-casualty",
        "planner",
        2,
        80,
    ): "e9887222d5159179ba43c6629fd82bb3 94ea6d4adccc9bea587e31c1aada204c 80",
    (
        "ember-v1/medium-hall-casualty",
        "planner",
        2,
        80,
    ): "626841935bb36c52db97ff93257a49ae fed3c786cbf0b38856dc15d1130d7e67 75",
    (
        "ember-v1/medium-bottleneck-casualty",
        "planner",
        2,
        80,
    ): "f3fb38f963fa2f506d0eb9fffe3d1311 685fe22a37b714485a9a3b821bd90b89 80",
    (
        "ember-v1/medium-multi-exit-casualty",
        "planner",
        2,
        80,
    ): "3b7148de8187ddd96ac80c3eb9aa371f e5e2b52cc13e23244c67374f40d18933 80",
    (
        "ember-v1/large-hall-casualty",
        "planner",
        1,
        40,
    ): "e9617f9b03a8dd983e5fbc6faaff77d7 87b4deaabae5d62a91e3299212442812 40",
    (
        "ember-v1/large-office-block",
        "planner",
        3,
        40,
    ): "8172717eeb4c4390b64f2547b79d190e 777b64ea9b04ca1635645b3af959c687 40",
    (
        "ember-v1/large-multi-exit-casualty",
        "greedy",
        2,
        60,
    ): "31da8536fac2130dd793e6635b0c980a 2ef427dfb4148100b442d585bb1ad37f 60",
    (
        "ember-v1/large-bottleneck-block",
        "random",
        3,
        30,
    ): "598440767e94dc107f2530f351af80b5 f4870aeea9a6161132388e91d457831d 30",
    (
        "ember-v1/large-hall-casualty",
        "greedy",
        5,
        50,
    ): "e66fa818127c2e9737caecc12e9da4fb ad081b4f917ef0bc76182b1dd0b8052d 50",
}
METRICS = {  # (scenario, policy, seed, max_steps or None): metrics
    ("ember-v1/medium-hall-casualty", "planner", 4, None): "e7cea156f6c6af39665bf656ca639e52",
    ("ember-v1/medium-hall-casualty", "greedy", 4, None): "8d1f956de48af3655a4cfb003c2ab5d6",
    ("ember-v1/large-hall-block", "greedy", 6, 60): "7de6f0ff5bdae033aed676d7ca005736",
    ("ember-v1/medium-office-block", "random", 7, 60): "99cae8a1fc65a50a67e2410059f7ce03",
}


@pytest.mark.parametrize("case", list(RECORDS), ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_records_and_observations_are_those_before_the_scale_work(case):
    assert record_digest(*case) == RECORDS[case]


@pytest.mark.parametrize("case", list(METRICS), ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_metrics_are_those_before_the_scale_work(case):
    assert metrics_digest(*case) == METRICS[case]
