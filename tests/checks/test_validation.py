"""Stage 1–2 defects (simulator.md §7) and replay-only defects, one record each."""

import copy

import pytest

import ember

from helpers.records import encode, parts, record_bytes, scripted
from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json

# The base episode (see test_metrics.FIRE): A is blocked by the wall twice,
# then walks to e1; B is blocked once, then walks to e2.
FIRE = picture_scenario(["1....", ".A#B.", "*...2"], max_steps=20)
FIRE_PLAN = [{"A": "east", "B": "west"}, {"A": "east", "B": "south"}, {"A": "north", "B": "east"}, {"A": "west"}]
BASE = parts(record_bytes(FIRE, scripted(FIRE_PLAN)))


def rejected(record, scenario=FIRE):
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(scenario, encode(record))
    return str(info.value)


def tampered(edit):
    record = copy.deepcopy(BASE)
    edit(record)
    return record


def setp(path, value):
    """An edit that sets record[path...] = value."""

    def edit(record):
        target = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def add_ignition(record):
    """A forged ignition at step 1, carried consistently into every later snapshot."""
    record["steps"][0]["ignitions"] = [[0, 4]]
    for step in record["steps"]:
        step["snapshot"]["burning"] = [[0, 4], [2, 0]]


def add_ignition_on_wall(record):
    record["steps"][0]["ignitions"] = [[1, 2]]
    record["steps"][0]["snapshot"]["burning"] = [[1, 2], [2, 0]]


def append_step_after_end(record):
    extra = copy.deepcopy(record["steps"][-1])
    extra["step"] = 5
    extra["snapshot"]["step"] = 5
    record["steps"].append(extra)


def swap_people(record):
    people = record["steps"][0]["snapshot"]["people"]
    people[0], people[1] = people[1], people[0]


STAGE_ONE_AND_TWO = [
    # stage 1: compatibility
    (
        "simulator version",
        setp(["header", "simulator_version"], "2.0"),
        "$.header.simulator_version",
        "simulator version",
    ),
    (
        "observation version",
        setp(["header", "observation_version"], "0.9"),
        "$.header.observation_version",
        "observation version",
    ),
    ("schema version", setp(["header", "schema_version"], "1.1"), "$.header.schema_version", "not supported"),
    ("scenario id", setp(["header", "scenario_id"], "other"), "$.header.scenario_id", "another scenario"),
    (
        "scenario hash",
        setp(["header", "scenario_hash"], "sha256:" + "0" * 64),
        "$.header.scenario_hash",
        "content hash",
    ),
    ("seed range", setp(["header", "seed"], 2**64), "$.header.seed", "2^64"),
    # initial state
    ("initial step", setp(["initial_state", "step"], 1), "$.initial_state.step", "expected 0"),
    (
        "initial position",
        setp(["initial_state", "people", 0, "position"], [0, 1]),
        "$.initial_state.people[0].position",
        "scenario position",
    ),
    (
        "initial status",
        setp(["initial_state", "people", 0, "status"], "evacuated"),
        "$.initial_state.people[0].status",
        "expected 'active'",
    ),
    ("initial burning", setp(["initial_state", "burning"], []), "$.initial_state.burning", "ignitions"),
    (
        "initial terminated",
        setp(["initial_state", "terminated"], True),
        "$.initial_state.terminated",
        "not to be terminated",
    ),
    ("initial trapped", setp(["initial_state", "trapped"], ["A"]), "$.initial_state.trapped", "trapped set"),
    # numbering and coverage
    ("step number", setp(["steps", 1, "step"], 5), "$.steps[1].step", "expected step number 2"),
    ("snapshot step", setp(["steps", 0, "snapshot", "step"], 3), "$.steps[0].snapshot.step", "expected 1"),
    ("missing action", lambda r: r["steps"][0]["actions"].pop("B"), "$.steps[0].actions", "'B' has none"),
    ("extra action", setp(["steps", 0, "actions", "Z"], "stay"), "$.steps[0].actions.Z", "not active"),
    ("missing movement", lambda r: r["steps"][0]["movements"].pop(1), "$.steps[0].movements", "'B' has none"),
    # movement consistency
    (
        "origin",
        setp(["steps", 0, "movements", 0, "origin"], [0, 0]),
        "$.steps[0].movements[0].origin",
        "position in s_0",
    ),
    (
        "stay needs stayed",
        setp(["steps", 1, "actions", "B"], "stay"),
        "$.steps[1].movements[1].outcome",
        "must have outcome 'stayed'",
    ),
    (
        "stayed needs stay",
        setp(["steps", 0, "movements", 0, "outcome"], "stayed"),
        "$.steps[0].movements[0].outcome",
        "requires action 'stay'",
    ),
    ("target", setp(["steps", 0, "movements", 0, "target"], [0, 1]), "$.steps[0].movements[0].target", "origin + east"),
    (
        "moved into wall",
        setp(["steps", 0, "movements", 0, "outcome"], "moved"),
        "$.steps[0].movements[0].outcome",
        "which is a wall",
    ),
    (
        "end position",
        setp(["steps", 1, "snapshot", "people", 1, "position"], [1, 3]),
        "$.steps[1].snapshot.people[1].position",
        "end of its movement",
    ),
    # fire
    ("ignition on wall", add_ignition_on_wall, "$.steps[0].ignitions[0]", "is a wall"),
    ("ignition not new", setp(["steps", 0, "ignitions"], [[2, 0]]), "$.steps[0].ignitions[0]", "already burning"),
    (
        "burning union",
        setp(["steps", 0, "snapshot", "burning"], [[0, 4], [2, 0]]),
        "$.steps[0].snapshot.burning",
        "∪ ignitions",
    ),
    # events and statuses
    ("missing evacuation", setp(["steps", 2, "evacuations"], []), "$.steps[2].evacuations", "has no entry"),
    (
        "wrong exit",
        setp(["steps", 2, "evacuations", 0, "exit_id"], "e1"),
        "$.steps[2].evacuations[0].exit_id",
        "expected 'e2'",
    ),
    (
        "event without change",
        setp(["steps", 0, "casualties"], [{"person_id": "A", "cause": "fire_spread"}]),
        "$.steps[0].casualties[0]",
        "no matching status change",
    ),
    (
        "status without cause",
        setp(["steps", 2, "snapshot", "people", 1, "status"], "casualty"),
        "$.steps[2].snapshot.people[1].status",
        "expected 'B' to be 'evacuated'",
    ),
    (
        "active on exit",
        setp(["steps", 2, "snapshot", "people", 1, "status"], "active"),
        "$.steps[2].snapshot.people[1].status",
        "stands on exit 'e2'",
    ),
    (
        "resolved changes",
        setp(["steps", 3, "snapshot", "people", 1, "position"], [2, 3]),
        "$.steps[3].snapshot.people[1]",
        "must never change",
    ),
    ("trapped", setp(["steps", 0, "snapshot", "trapped"], ["A"]), "$.steps[0].snapshot.trapped", "trapped set"),
    # termination
    (
        "early termination",
        lambda r: r["steps"][0]["snapshot"].update(terminated=True, termination_reason="max_steps"),
        "$.steps[0].snapshot.terminated",
        "expected not terminated",
    ),
    (
        "no termination",
        lambda r: r["steps"][3]["snapshot"].update(terminated=False, termination_reason=None),
        "$.steps[3].snapshot.termination_reason",
        "'all_resolved'",
    ),
    (
        "wrong reason",
        setp(["steps", 3, "snapshot", "termination_reason"], "max_steps"),
        "$.steps[3].snapshot.termination_reason",
        "'all_resolved'",
    ),
    ("step after termination", append_step_after_end, "$.steps[4]", "only the last snapshot"),
    ("no steps", setp(["steps"], []), "$.steps", "no steps"),
    ("final state", setp(["final_state", "step"], 3), "$.final_state.step", "s_4"),
    ("final trapped", setp(["final_state", "trapped"], ["A"]), "$.final_state.trapped", "s_4"),
    # shapes and orderings
    (
        "outcome name",
        setp(["steps", 0, "movements", 0, "outcome"], "flew"),
        "$.steps[0].movements[0].outcome",
        "expected one of",
    ),
    ("people order", swap_people, "$.steps[0].snapshot.people[0].person_id", "sorted by ID"),
    (
        "boolean as integer",
        setp(["steps", 0, "snapshot", "people", 0, "position"], [True, 1]),
        "$.steps[0].snapshot.people[0].position",
        "two integers",
    ),
    ("extra key", setp(["steps", 0, "extra"], 1), "$.steps[0].extra", "unexpected key"),
    ("missing key", lambda r: r["steps"][0].pop("ignitions"), "$.steps[0]", "missing key 'ignitions'"),
    ("null list", setp(["steps", 0, "casualties"], None), "$.steps[0].casualties", "expected a list"),
    (
        "cell out of bounds",
        setp(["steps", 0, "snapshot", "people", 0, "position"], [9, 9]),
        "$.steps[0].snapshot.people[0].position",
        "out of bounds",
    ),
    ("burning order", add_ignition, None, None),  # valid shape: new ignition, but not the RNG's: replay catches it
]


@pytest.mark.parametrize("case", [c for c in STAGE_ONE_AND_TWO if c[2]], ids=lambda c: c[0])
def test_stage_one_and_two_defects(case):
    _, edit, path, fragment = case
    message = rejected(tampered(edit))
    assert message.startswith(path + ":"), message
    assert fragment in message, message
    assert "replay" not in message


def test_unsorted_burning_is_a_shape_defect():
    record = tampered(setp(["initial_state", "burning"], [[2, 0], [0, 0]]))
    message = rejected(record)
    assert message.startswith("$.initial_state.burning[1]:") and "out of order" in message


def test_two_people_end_in_one_cell():
    sc = picture_scenario(["A.B", "...", "..1"], max_steps=3)
    record = parts(record_bytes(sc, scripted([{"A": "east", "B": "west"}])))
    moves = record["steps"][0]["movements"]
    assert [m["outcome"] for m in moves] == ["blocked_conflict", "blocked_conflict"]
    for m in moves:
        m["outcome"] = "moved"
    for person in record["steps"][0]["snapshot"]["people"]:
        person["position"] = [0, 1]
    message = rejected(record, sc)
    assert message.startswith("$.steps[0].movements[1]:") and "both end the movement phase on [0, 1]" in message


def test_moved_out_of_bounds():
    sc = picture_scenario(["A.1"], max_steps=3)
    record = parts(record_bytes(sc, scripted([{"A": "north"}])))
    assert record["steps"][0]["movements"][0]["target"] == [-1, 0]
    record["steps"][0]["movements"][0]["outcome"] = "moved"
    message = rejected(record, sc)
    assert message.startswith("$.steps[0].movements[0].outcome:") and "out of bounds" in message


def test_moved_into_fire_under_block():
    sc = picture_scenario(["A*1", "..."], max_steps=3, enter_fire="block")
    record = parts(record_bytes(sc, scripted([{"A": "east"}])))
    assert record["steps"][0]["movements"][0]["outcome"] == "blocked_fire"
    record["steps"][0]["movements"][0]["outcome"] = "moved"
    message = rejected(record, sc)
    assert "burning in s_0, under enter_fire 'block'" in message


def test_entered_fire_cause_is_implied():
    sc = picture_scenario(["A*1", "..."], max_steps=3)
    record = parts(record_bytes(sc, scripted([{"A": "east"}])))
    assert record["steps"][0]["casualties"] == [{"person_id": "A", "cause": "entered_fire"}]
    record["steps"][0]["casualties"][0]["cause"] = "fire_spread"
    message = rejected(record, sc)
    assert message.startswith("$.steps[0].casualties[0].cause:") and "expected 'entered_fire'" in message


# --------------------------------------------------------------------------
# Stage 3: consistent records the simulator could not have written.

QUEUE = picture_scenario(["AB.1"], max_steps=6)
QUEUE_PLAN = [{"A": "east"}, {"B": "east"}, {"A": "east", "B": "east"}, {"A": "east"}, {"A": "east"}]


def replay_failure(record, scenario):
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(scenario, encode(record))
    message = str(info.value)
    assert message.startswith("record failed simulator replay verification: "), message
    assert isinstance(info.value.__cause__, ember.ReplayMismatchError)
    return info.value.__cause__


def test_blocked_wall_into_open_cell():
    record = parts(record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    assert record["steps"][0]["movements"][0]["outcome"] == "blocked_occupied"
    record["steps"][0]["movements"][0]["outcome"] = "blocked_wall"
    cause = replay_failure(record, QUEUE)
    assert cause.step == 1 and cause.path == "$.steps[0].movements[0].outcome"
    assert '"blocked_wall"' in str(cause) and '"blocked_occupied"' in str(cause)


def test_forged_ignition():
    cause = replay_failure(tampered(add_ignition), FIRE)
    assert cause.step == 1 and cause.path == "$.steps[0].ignitions[0]"


def test_wrong_seed():
    sc = picture_scenario(["A......1", "........", "*......."], max_steps=12, p="1/2")
    record = parts(record_bytes(sc, scripted([]), seed=0))
    record["header"]["seed"] = 1
    cause = replay_failure(record, sc)
    assert cause.step >= 1 and ".ignitions" in cause.path


def test_structural_defect_after_divergence_wins():
    record = parts(record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    record["steps"][0]["movements"][0]["outcome"] = "blocked_wall"  # replay diverges at step 1
    record["steps"][2]["step"] = 7  # a structural defect later
    message = rejected(record, QUEUE)
    assert message.startswith("$.steps[2].step:"), message


def test_truncation_after_divergence_wins():
    record = parts(record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    record["steps"][0]["movements"][0]["outcome"] = "blocked_wall"
    data = encode(record)
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(QUEUE, data[: len(data) // 2 + 3])
    assert "replay" not in str(info.value)


def test_verify_replay():
    good = record_bytes(QUEUE, scripted(QUEUE_PLAN))
    assert ember.verify_replay(QUEUE, good) is None
    record = parts(good)
    record["steps"][0]["movements"][0]["outcome"] = "blocked_wall"
    with pytest.raises(ember.ReplayMismatchError) as info:
        ember.verify_replay(QUEUE, encode(record))
    assert info.value.step == 1
    with pytest.raises(ember.ReplayMismatchError):
        ember.verify_replay(QUEUE, good[:-10])
    with pytest.raises(ember.ReplayMismatchError):
        ember.verify_replay(QUEUE, good.replace(b'"seed":0', b'"seed":true'))


def test_whitespace_and_key_order_are_accepted():
    import json

    record = parts(record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    pretty = json.dumps(record, indent=3, sort_keys=True).encode()
    reordered = json.dumps(
        {
            "header": record["header"],
            "initial_state": record["initial_state"],
            "steps": record["steps"],
            "final_state": record["final_state"],
        },
        indent=1,
    ).encode()
    expected = ember.episode_metrics(QUEUE, encode(record)).to_dict()
    assert_same_json(ember.episode_metrics(QUEUE, pretty).to_dict(), expected)
    assert_same_json(ember.episode_metrics(QUEUE, reordered).to_dict(), expected)


def test_verify_replay_wraps_an_invalid_scenario():
    bad = dict(QUEUE, grid={"rows": 0, "cols": 4})
    with pytest.raises(ember.ReplayMismatchError) as info:
        ember.verify_replay(bad, record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    assert isinstance(info.value.__cause__, ember.ScenarioError)
    assert "$.grid.rows" in str(info.value)


def test_invalid_scenario_is_a_metrics_input_error():
    bad = dict(QUEUE, grid={"rows": 0, "cols": 4})
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(bad, record_bytes(QUEUE, scripted(QUEUE_PLAN)))
    assert isinstance(info.value.__cause__, ember.ScenarioError)
    assert "$.grid.rows" in str(info.value)
