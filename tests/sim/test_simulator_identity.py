"""The simulator's records and observations are byte-identical to those of the
code before the speed work.

The SHA-256 digests below were computed from the unmodified simulator
(commit d928755) by ``digest(case)``: any change to a record byte or to an
observation a policy sees changes a digest.  The cases cover every built-in
scenario, the three built-in policies, several seeds, both ``enter_fire``
rules, and fire at p = 0, small p, 1/2 and 1 (the ``sorted(frontier)`` path),
on the 1,000-people hall too.
"""

import hashlib
import re

import pytest

from ember import ActionError, Simulator, load_scenario
from ember.canonical import (
    AFTER_HEADER,
    AFTER_INITIAL,
    AFTER_STEPS,
    BETWEEN_STEPS,
    RECORD_HEAD,
    RECORD_TAIL,
    canonical_json,
)
from ember.sim.policies import make_policy


def scenario_for(name, max_steps=None, p=None, enter_fire=None):
    scenario = load_scenario(f"builtin:{name}")
    if max_steps is not None:
        scenario["termination"]["max_steps"] = max_steps
    if p is not None:
        scenario["fire"]["spread_probability"] = p
    if enter_fire is not None:
        scenario["fire"]["enter_fire"] = enter_fire
    return scenario


def digest(case):
    """SHA-256 of the record bytes and of every observation, for one case."""
    name, policy_name, seed, overrides = case
    scenario = scenario_for(name, **overrides)
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


CASES = [
    *[("small-room", policy, seed, {}) for policy in ("stay", "random", "greedy") for seed in (0, 1, 12345)],
    *[("office", policy, seed, {}) for policy in ("random", "greedy") for seed in (0, 3)],
    *[("bottleneck", policy, seed, {}) for policy in ("random", "greedy") for seed in (0, 2)],
    ("bottleneck", "greedy", 5, {"p": "1/1"}),
    ("office", "random", 9, {"p": "0/1", "enter_fire": "casualty"}),
    ("long-horizon", "random", 1, {"max_steps": 400}),
    ("long-horizon", "greedy", 4, {"max_steps": 200, "p": "1/2"}),
    ("hall", "random", 0, {"max_steps": 40}),
    ("hall", "greedy", 1, {"max_steps": 40}),
    ("hall", "random", 2, {"max_steps": 25, "p": "1/1"}),
    ("hall", "greedy", 3, {"max_steps": 25, "p": "1/2", "enter_fire": "block"}),
]

PINNED = {
    "small-room stay 0 []": "80b4ade91d50126d27835c827c512894 f64717daffb82f44fc6639ae5de12d0b 27",
    "small-room stay 1 []": "85071694f2ec132dbdc7b4c621ccb1da 6c89879bd94f03ab4b05294b7ac066b3 23",
    "small-room stay 12345 []": "4fb51b5fdb265abb3bf3bc4245ee9ef3 5fb5f7d53d06d7652a2d034cb31491f7 28",
    "small-room random 0 []": "1d5a6f4eff0a29f3b5e4aed19c6f607e 54ee4552a698233b5c5e7b122559c9e5 20",
    "small-room random 1 []": "cff98c6740e6f9bbc270ffd4ead8990c de742233ee14a2848c8f20cbf18e69a1 12",
    "small-room random 12345 []": "1b857a62d4a3b8d31d594df91810b0f8 f2dcee6c452a13774c96d88995e88327 20",
    "small-room greedy 0 []": "67b92521c0f5569adff541fe15c78d08 a14554ecc3367da6d095e128f23af90b 8",
    "small-room greedy 1 []": "43bde0cb3981079ed1f87e2644b02365 7e53b666be9a278a37c7060b0977ca11 8",
    "small-room greedy 12345 []": "882af183dbd2a65cc1e149cff5e13c4d 6d50c68d1a58872d0dfbc17c87afe803 8",
    "office random 0 []": "c23f00aa40500e794408e1a078a3b4c1 0b6c25d9154263267642c0402e0e1807 232",
    "office random 3 []": "b5734aaf586aa071cd1f70639d4884ff 7c95c1d00b9adc54b5c32e88373355b4 218",
    "office greedy 0 []": "0b1a64fec33d4742f449e5a639ce93ab 95387c2a17bed097be10fbb1659d93d8 26",
    "office greedy 3 []": "c99a01914bdc2774962ef60178e90861 a7f826bf18e4a3458cccb42e3ae16136 26",
    "bottleneck random 0 []": "1a424e788969877c43cf269ec305bf01 d03c06372b369d1020bf72c9669d60eb 150",
    "bottleneck random 2 []": "21faa6f725459a8b359fa8749a20d120 7c98edaf58572a26e730563df9943707 152",
    "bottleneck greedy 0 []": "2989194c9968cd32eb271df15f8d94c3 8803db718b557d4ca30ef1fcf5dbff0e 178",
    "bottleneck greedy 2 []": "2131d334b0c0c84507294892827b1dc2 7d7a488a2d2fc6ea55a4e1910103ef34 177",
    "bottleneck greedy 5 [('p', '1/1')]": "5b941df38fa807714d70dca466794156 1fce68b89e4c0c7bc400c1b7687e1b07 22",
    "office random 9 [('enter_fire', 'casualty'), ('p', '0/1')]": (
        "e9bc28d4146686e885e2bc4d60a92d03 c1d2e3745cfa70da62d2c8a06adb0dcf 500"
    ),
    "long-horizon random 1 [('max_steps', 400)]": (
        "cebe9341788aaeb7b8e869823ffd988d ddb9c58a4ed95b4f885d7277f8b8d705 400"
    ),
    "long-horizon greedy 4 [('max_steps', 200), ('p', '1/2')]": (
        "8f0642ef1b624adee7ea272fe0740d90 26c225c51bb40e26d55c6fd3876b8b46 200"
    ),
    "hall random 0 [('max_steps', 40)]": "c4c854b0df105fdd7d41bba2d85b0c0a 11e1a274c2aaa2b8cb51bf0240de34d4 40",
    "hall greedy 1 [('max_steps', 40)]": "fe4dd41e7f8bcd5994f954a64d51ec43 9c364f3a87a4c44add1508e448839d01 40",
    "hall random 2 [('max_steps', 25), ('p', '1/1')]": (
        "1fdf650545f11c6181f0485b3746e9ae 48b97b5bee9c5913256f8efa336e8f3a 25"
    ),
    "hall greedy 3 [('enter_fire', 'block'), ('max_steps', 25), ('p', '1/2')]": (
        "80c0ad6a7ec76d1152a1ceccdabd3696 52c17b3013e8ccf45d91bd02e4997c41 25"
    ),
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{'-'.join(map(str, c[3].values()))}")
def test_records_and_observations_are_unchanged(case):
    key = f"{case[0]} {case[1]} {case[2]} {sorted(case[3].items())}"
    assert digest(case) == PINNED[key]


# ---------------------------------------------------------------------------
# What the speed work must not change besides the bytes.


def test_the_collector_state_is_restored_by_step_and_observe():
    import gc

    sim = Simulator(scenario_for("small-room"), 0)
    policy = make_policy("random", sim.scenario, 0)
    assert gc.isenabled()
    sim.step(policy(sim.observe()))
    assert gc.isenabled()
    with pytest.raises(ActionError):
        sim.step({"nobody": "stay"})
    assert gc.isenabled()
    gc.disable()
    try:
        sim.step(policy(sim.observe()))
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "actions, message",
    [
        ({"p0000": ["north"]}, "has unknown action ['north']"),
        ({"p0000": {}}, "has unknown action {}"),
        ({"p0000": None}, "has unknown action None"),
        ({}, "no action for active person 'p0000'"),
    ],
)
def test_unusual_actions_are_action_errors_naming_the_person(actions, message):
    sim = Simulator(scenario_for("hall", max_steps=5), 0)
    full = {p["person_id"]: "stay" for p in sim.observe()["people"]}
    full.update(actions)
    if not actions:
        del full["p0000"]
    with pytest.raises(ActionError, match=re.escape(message)):
        sim.step(full)
    assert sim.t == 0
