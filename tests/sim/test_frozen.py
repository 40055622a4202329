"""What the public ``Simulator`` hands out cannot be changed behind its back, and costs no copy a step.

The burning list and its cells are shared from step to step, and between
a snapshot and the next observation (``ember.frozen``): a policy that tries
every change on every field of every observation, and a caller that does
the same to every step and to the initial state, change nothing in the
record or in the observations that follow, byte for byte.
"""

import copy
import json
import pickle

import pytest

from ember import Simulator, load_scenario
from ember.canonical import canonical_json, canonical_json_reference
from ember.frozen import FrozenList, frozen_list
from ember.sim.policies import make_policy

JUNK = [-7, -7]


def list_changes(value):
    """Every way the list API has of changing ``value`` (each a thunk)."""

    def inplace_add():
        target = value
        target += [JUNK]

    def inplace_mul():
        target = value
        target *= 2

    return [
        lambda: value.__setitem__(0, JUNK),
        lambda: value.__setitem__(slice(0, 1), [JUNK]),
        lambda: value.__delitem__(0),
        lambda: value.append(JUNK),
        lambda: value.extend([JUNK]),
        lambda: value.insert(0, JUNK),
        lambda: value.pop(),
        lambda: value.remove(value[0]),
        lambda: value.sort(reverse=True),
        lambda: value.reverse(),
        lambda: value.__init__([JUNK]),
        inplace_add,
        inplace_mul,
        lambda: value.clear(),
    ]


def dict_changes(value):
    def inplace_or():
        target = value
        target |= {"junk": 1}

    key = next(iter(value))
    return [
        lambda: value.__setitem__(key, JUNK),
        lambda: value.__setitem__("junk", JUNK),
        lambda: value.update({key: JUNK}),
        lambda: value.setdefault("junk", JUNK),
        lambda: value.__init__({key: JUNK}),
        inplace_or,
        lambda: value.pop(key),
        lambda: value.__delitem__(key),
        lambda: value.popitem(),
        lambda: value.clear(),
    ]


def scribble(value, refused):
    """Try every change on ``value`` and everything inside it, innermost first; count the refusals."""
    if isinstance(value, dict):
        for item in list(value.values()):
            scribble(item, refused)
        changes = dict_changes(value) if value else []
    elif isinstance(value, list):
        for item in list(value):
            scribble(item, refused)
        changes = list_changes(value) if value else []
    else:
        return
    for change in changes:
        try:
            change()
        except TypeError as exc:
            if "read-only" in str(exc):
                refused[type(value).__name__] = refused.get(type(value).__name__, 0) + 1
            # else: sorting a fresh list of dicts, which has no order
        except (IndexError, KeyError, ValueError):  # a fresh container already emptied by an earlier change
            pass


def run(scenario, seed, evil):
    """Record bytes (each part encoded as soon as it is handed out) and every observation's bytes."""
    sim = Simulator(scenario, seed)
    policy = make_policy("greedy", sim.scenario, seed)
    parts = [canonical_json(sim.header), canonical_json(sim.initial_state)]
    observations = []
    refused = {}
    if evil:
        scribble(sim.initial_state, refused)
    while not sim.terminated:
        observation = sim.observe()
        observations.append(canonical_json(observation))
        actions = policy(observation)
        if evil:
            scribble(observation, refused)  # the policy edits what it was given, after answering
        step = sim.step(actions)
        parts.append(canonical_json(step))
        if evil:
            scribble(step, refused)  # and the caller the step it got back
    parts.append(canonical_json(sim.final_state))
    return parts, observations, refused


@pytest.mark.parametrize(
    "name, seed, overrides",
    [("small-room", 1, {}), ("hall", 0, {"max_steps": 8, "p": "1/1"}), ("office", 3, {"enter_fire": "block"})],
)
def test_a_policy_and_a_caller_changing_everything_they_get_change_no_byte(name, seed, overrides):
    scenario = load_scenario(f"builtin:{name}")
    if "max_steps" in overrides:
        scenario["termination"]["max_steps"] = overrides["max_steps"]
    scenario["fire"]["spread_probability"] = overrides.get("p", scenario["fire"]["spread_probability"])
    scenario["fire"]["enter_fire"] = overrides.get("enter_fire", scenario["fire"]["enter_fire"])
    clean = run(scenario, seed, evil=False)
    parts, observations, refused = run(scenario, seed, evil=True)
    assert parts == clean[0]
    assert observations == clean[1]
    # The shared parts (the burning lists and their cells) refused the whole list API.
    assert set(refused) == {"BurningCells", "FrozenList"}
    assert refused["BurningCells"] % len(list_changes([1])) == 0 and refused["FrozenList"] % len(list_changes([1])) == 0


def test_an_observation_shares_the_burning_list_with_the_snapshot_before_it():
    scenario = load_scenario("builtin:hall")
    scenario["fire"]["spread_probability"] = "1/1"
    sim = Simulator(scenario, 0)
    policy = make_policy("random", sim.scenario, 0)
    step = sim.step(policy(sim.observe()))
    observation = sim.observe()
    assert observation["burning"] is step["snapshot"]["burning"]  # one list, no copy
    assert observation["burning"] is sim.observe()["burning"]
    assert type(observation["burning"][0]) is FrozenList


def test_frozen_values_are_lists_and_dicts_to_every_reader_and_copies_are_plain():
    value = frozen_list([frozen_list([1, 2]), frozen_list([3, 4])])
    nested = {"people": [{"position": value[1]}], "burning": value}
    plain = json.loads(json.dumps(nested))
    assert nested == plain and isinstance(value, list)
    assert canonical_json(nested) == canonical_json_reference(nested) == canonical_json(plain)
    for made in (copy.copy(value), pickle.loads(pickle.dumps(value)), value.copy(), value[:], value + []):
        assert type(made) is list and made == value
        made.append([5, 6])  # the copy is the caller's
    deep = copy.deepcopy(nested)
    assert type(deep["burning"]) is list and type(deep["burning"][0]) is list and deep == plain
    with pytest.raises(TypeError, match="read-only"):
        FrozenList([1, 2])  # made only by frozen_list
