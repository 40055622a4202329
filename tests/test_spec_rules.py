"""Spec rules that had no test: one tampered record each, refused at the named path.

simulator.md §5 (shape, orderings) and §7 (stage 2 rules); output.md
(``MetricsStream`` life cycle, ``ember replay`` exit status).
"""

import copy
import json
import subprocess
import sys

import pytest

import ember

from helpers.records import encode, parts, record_bytes, scripted
from helpers.scenarios import picture_scenario

TIMEOUT = 60  # only stops a hang

# At step 1, A and B leave by two exits and the fire spreads onto C and D: two events of each kind.
CROWD = picture_scenario(["1AB2", "....", "C*D."], max_steps=3, p="1/1")
CROWD_PLAN = [{"A": "west", "B": "east"}]
CROWD_RECORD = parts(record_bytes(CROWD, scripted(CROWD_PLAN)))


def rejected(record, scenario=CROWD):
    """The message of the MetricsInputError for ``record``: a stage 1-2 defect, reported before any replay."""
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(scenario, encode(record))
    message = str(info.value)
    assert "replay" not in message, message
    return message


def tampered(edit, record=CROWD_RECORD):
    record = copy.deepcopy(record)
    edit(record)
    return record


def step_one(record):
    return record["steps"][0]


def test_the_base_record_has_what_the_cases_need():
    step = step_one(CROWD_RECORD)
    assert step["evacuations"] == [{"exit_id": "e1", "person_id": "A"}, {"exit_id": "e2", "person_id": "B"}]
    assert step["casualties"] == [
        {"cause": "fire_spread", "person_id": "C"},
        {"cause": "fire_spread", "person_id": "D"},
    ]
    assert step["snapshot"]["termination_reason"] == "all_resolved" and len(CROWD_RECORD["steps"]) == 1
    assert ember.episode_metrics(CROWD, encode(CROWD_RECORD)).to_dict()["safety"]["casualties"] == 2


def _swap_first_two(key):
    def edit(record):
        events = step_one(record)[key]
        events[0], events[1] = events[1], events[0]

    return edit


def _repeat_first(key):
    def edit(record):
        events = step_one(record)[key]
        events[1] = copy.deepcopy(events[0])

    return edit


@pytest.mark.parametrize("key", ["evacuations", "casualties"])
def test_events_must_be_sorted_by_id(key):
    assert rejected(tampered(_swap_first_two(key))) == (
        f"$.steps[0].{key}[1].person_id: person {'A' if key == 'evacuations' else 'C'!r} is out of order; "
        "entries must be sorted by person ID without duplicates."
    )


@pytest.mark.parametrize("key", ["evacuations", "casualties"])
def test_events_must_be_unique(key):
    assert rejected(tampered(_repeat_first(key))) == (
        f"$.steps[0].{key}[1].person_id: person {'A' if key == 'evacuations' else 'C'!r} is listed twice; "
        "entries must be sorted by person ID without duplicates."
    )


TRAPPED = picture_scenario(["AB#1", "###."], max_steps=2)  # A and B walled in: trapped from s_0 on


def test_trapped_must_be_sorted_and_unique():
    record = parts(record_bytes(TRAPPED, scripted([])))
    assert step_one(record)["snapshot"]["trapped"] == ["A", "B"]
    unsorted = tampered(lambda r: step_one(r)["snapshot"].update(trapped=["B", "A"]), record)
    assert rejected(unsorted, TRAPPED) == (
        "$.steps[0].snapshot.trapped[1]: ID 'A' is out of order; IDs must be sorted without duplicates."
    )
    doubled = tampered(lambda r: step_one(r)["snapshot"].update(trapped=["A", "A"]), record)
    assert rejected(doubled, TRAPPED) == (
        "$.steps[0].snapshot.trapped[1]: ID 'A' is listed twice; IDs must be sorted without duplicates."
    )


def test_stay_with_a_target_is_refused():
    def edit(record):
        move = step_one(record)["movements"][2]  # C stays
        assert move["outcome"] == "stayed"
        move["target"] = move["origin"]

    expected = "$.steps[0].movements[2].target: action 'stay' must have a null target, got [2, 0]."
    assert rejected(tampered(edit)) == expected


def test_more_movements_than_active_people_is_refused():
    def edit(record):
        step_one(record)["movements"].append({"person_id": "Z", "origin": [1, 3], "target": None, "outcome": "stayed"})

    assert rejected(tampered(edit)) == (
        "$.steps[0].movements[4]: expected 4 movements (one per active person), got 5; 'Z' is not active."
    )


@pytest.mark.parametrize(
    "where, value, expected",
    [
        (("snapshot", "people", 0, "status"), "escaped", "expected 'active', 'evacuated' or 'casualty'"),
        (("casualties", 0, "cause"), "smoke", "expected 'entered_fire' or 'fire_spread'"),
        (("snapshot", "termination_reason"), "timeout", "expected null, 'all_resolved' or 'max_steps'"),
    ],
)
def test_unknown_enumeration_strings_are_refused(where, value, expected):
    def edit(record):
        target = step_one(record)
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = value

    path = "$.steps[0]" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where)
    assert rejected(tampered(edit)) == f"{path}: {expected}, got the string {value!r}."


def test_snapshot_missing_a_person_is_refused():
    message = rejected(tampered(lambda r: step_one(r)["snapshot"]["people"].pop(2)))  # C
    assert message == "$.steps[0].snapshot.people: expected 4 people (every scenario person), got 3."


def test_active_person_on_a_burning_cell_is_refused():
    def edit(record):
        step = step_one(record)
        step["casualties"] = step["casualties"][1:]  # C's event goes, and C stays active on its burning cell
        step["snapshot"]["people"][2]["status"] = "active"

    assert rejected(tampered(edit)) == (
        "$.steps[0].snapshot.people[2].status: "
        "expected 'C' to be 'casualty' at step 1 because its cell ignited, got 'active'."
    )


def test_entered_fire_claimed_for_a_fire_spread_casualty_is_refused():
    record = tampered(lambda r: step_one(r)["casualties"][0].update(cause="entered_fire"))
    assert rejected(record) == "$.steps[0].casualties[0].cause: expected 'fire_spread' for 'C', got 'entered_fire'."


def test_final_state_people_must_match_the_last_snapshot():
    def edit(record):
        record["final_state"]["people"][0]["position"] = [1, 0]

    expected = "$.final_state.people: expected the value of s_1's 'people', got a different value."
    assert rejected(tampered(edit)) == expected


HORIZON = picture_scenario(["A..1"], max_steps=2)  # A stays: the episode ends at the horizon


def test_reaching_the_horizon_without_terminating_is_refused():
    record = parts(record_bytes(HORIZON, scripted([])))
    assert record["steps"][-1]["snapshot"]["termination_reason"] == "max_steps"
    unterminated = tampered(
        lambda r: r["steps"][-1]["snapshot"].update(terminated=False, termination_reason=None), record
    )
    assert rejected(unterminated, HORIZON) == (
        "$.steps[1].snapshot.termination_reason: expected terminated with reason 'max_steps' at step 2, "
        "got terminated=false, reason None."
    )


def test_metrics_stream_feed_after_close_and_close_twice():
    data = encode(CROWD_RECORD)
    stream = ember.MetricsStream(CROWD)
    stream.feed(data)
    result = stream.close().to_dict()
    with pytest.raises(ember.MetricsInputError) as info:
        stream.feed(b" ")
    feed_message = str(info.value)
    with pytest.raises(ember.MetricsInputError) as info:
        stream.close()
    close_message = str(info.value)
    closed = "the stream is closed; start a new MetricsStream for another record."
    assert (feed_message, close_message) == (closed, closed)
    assert result["safety"]["population"] == 4


def test_replay_cli_exits_2_on_a_record_that_does_not_replay(tmp_path):
    sc = picture_scenario(["A......1", "........", "*......."], max_steps=12, p="1/2")
    record = parts(record_bytes(sc, scripted([]), seed=0))
    record["header"]["seed"] = 1
    scenario_path, record_path = tmp_path / "s.json", tmp_path / "r.record"
    scenario_path.write_text(json.dumps(sc))
    record_path.write_bytes(encode(record))
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "replay", scenario_path, record_path], capture_output=True, timeout=TIMEOUT
    )
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines == [
        "ember: step 1: $.steps[0].ignitions[0]: the record has nothing, the replay gives [1,0] "
        "(first difference in this step)."
    ]
