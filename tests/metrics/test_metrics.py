"""Metric values (metrics.md §4–10, §12, §13) against hand computations and a batch reference."""

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.engine.run import measure_run

from helpers.batch_metrics import batch_metrics
from helpers.records import record_bytes, scripted
from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json


def metrics_of(scenario, data):
    return ember.episode_metrics(scenario, data).to_dict()


# --------------------------------------------------------------------------
# A hand-computed corridor episode: A walks east with one pause, no fire.

CORRIDOR = picture_scenario(["A...1"], max_steps=10)
CORRIDOR_PLAN = [{"A": "east"}, {"A": "stay"}, {"A": "east"}, {"A": "east"}, {"A": "east"}]


@pytest.fixture(scope="module")
def corridor():
    data = record_bytes(CORRIDOR, scripted(CORRIDOR_PLAN))
    return metrics_of(CORRIDOR, data)


def test_corridor_safety(corridor):
    assert_same_json(
        corridor["safety"],
        {
            "population": 1,
            "evacuated": 1,
            "casualties": 0,
            "stranded": 0,
            "evacuated_rate": 1.0,
            "casualty_rate": 0.0,
            "stranded_rate": 0.0,
            "terminal_trapped_count": 0,
            "terminal_trapped_rate": 0.0,
            "casualties_by_cause": {"entered_fire": 0, "fire_spread": 0},
        },
    )


def test_corridor_time(corridor):
    assert_same_json(
        corridor["time"],
        {
            "episode_steps": 5,
            "max_steps": 10,
            "evacuees": 1,
            "non_evacuees": 0,
            "evacuation_steps": {"A": 5},
            "first_evacuation_step": 5,
            "last_evacuation_step": 5,
            "mean_evacuation_step": 5.0,
            "median_evacuation_step": 5.0,
            "person_time_to_safety_total": 5,
            "mean_person_time_to_safety": 5.0,
        },
    )


def test_corridor_movement_and_path(corridor):
    assert_same_json(
        corridor["movement"],
        {
            "decisions": 5,
            "stay_actions": 1,
            "movement_attempts": 4,
            "successful_moves": 4,
            "blocked_moves": 0,
            "blocked_by_outcome": dict.fromkeys(
                (
                    "blocked_boundary",
                    "blocked_wall",
                    "blocked_fire",
                    "blocked_occupied",
                    "blocked_conflict",
                    "blocked_cycle",
                ),
                0,
            ),
            "congestion_blocks": 0,
            "stay_rate": 0.2,
            "blocked_rate": 0.0,
            "congestion_block_rate": 0.0,
        },
    )
    assert_same_json(
        corridor["path_efficiency"],
        {
            "evacuees_measured": 1,
            "total_cells_moved": 4,
            "total_static_lower_bound": 4,
            "aggregate_path_efficiency": 1.0,
            "mean_path_efficiency": 1.0,
            "mean_detour_ratio": 1.0,
        },
    )


def test_corridor_no_fire_exposure(corridor):
    # Active person-states: s_0 .. s_4 (A evacuates at step 5).
    assert_same_json(
        corridor["fire_exposure"],
        {
            "active_person_states": 5,
            "person_states_with_fire": 0,
            "person_states_without_fire": 5,
            "distance_histogram": {},
            "adjacent_person_states": 0,
            "min_fire_distance": None,
            "exposure_total": 0.0,
            "mean_exposure": 0.0,
        },
    )


def test_corridor_exits_replanning_people(corridor):
    assert_same_json(
        corridor["exits"],
        {
            "exit_count": 1,
            "exits_used": 1,
            "evacuations_per_exit": {"e1": 1},
            "exit_shares": {"e1": 1.0},
            "max_exit_share": 1.0,
            "exit_balance": None,
        },
    )
    assert corridor["replanning"]["blocked_events"] == 0
    assert corridor["replanning"]["recovery_proxy_rate"] is None
    assert_same_json(
        corridor["people"]["A"],
        {
            "person_id": "A",
            "initial_position": [0, 0],
            "final_position": [0, 4],
            "status": "evacuated",
            "resolution_step": 5,
            "exit_id": "e1",
            "casualty_cause": None,
            "decisions": 5,
            "stay_actions": 1,
            "cells_moved": 4,
            "blocked_moves": 0,
            "max_consecutive_blocks": 0,
            "time_to_safety": 5,
            "static_exit_distance": 4,
            "path_efficiency": 1.0,
            "detour_ratio": 1.0,
            "min_fire_distance": None,
            "fire_exposure": 0.0,
        },
    )
    assert corridor["metrics_version"] == "1.0" and corridor["seed"] == 0


# --------------------------------------------------------------------------
# A hand-computed episode with fire, blocks, two exits and a detour.
#
#   row 0:  1 . . . .      exits e1 [0,0], e2 [2,4]; fire at [2,0], p = 0
#   row 1:  . A # B .      (static fire: distances never change)
#   row 2:  * . . . 2


FIRE = picture_scenario(["1....", ".A#B.", "*...2"], max_steps=20)
FIRE_PLAN = [
    {"A": "east", "B": "west"},  # t1: A blocked_wall, B blocked_wall
    {"A": "east", "B": "south"},  # t2: A blocked_wall again, B moves to [2,3]
    {"A": "north", "B": "east"},  # t3: A moves to [0,1], B evacuates via e2
    {"A": "west"},  # t4: A evacuates via e1
]


@pytest.fixture(scope="module")
def fire_episode():
    return metrics_of(FIRE, record_bytes(FIRE, scripted(FIRE_PLAN)))


def test_fire_episode_values(fire_episode):
    m = fire_episode
    assert_same_json(m["time"]["evacuation_steps"], {"A": 4, "B": 3})
    assert m["time"]["median_evacuation_step"] == 3.5
    assert m["time"]["person_time_to_safety_total"] == 7
    assert m["movement"]["blocked_by_outcome"]["blocked_wall"] == 3
    assert m["movement"]["blocked_rate"] == 3 / 7
    assert m["movement"]["congestion_block_rate"] == 0.0
    # L_A = 2 (north, west), L_B = 2 (south, east); A moved 2, B moved 2.
    assert m["path_efficiency"]["aggregate_path_efficiency"] == 1.0
    # Replanning: A blocked t1 -> blocked t2 (same action), then t2 -> moved t3 (changed).
    # B blocked t1 -> moved t2 (changed).
    assert_same_json(
        m["replanning"],
        {
            "blocked_events": 3,
            "blocks_with_next_decision": 3,
            "blocks_without_next_decision": 0,
            "moved_after_block": 2,
            "blocked_after_block": 1,
            "stayed_after_block": 0,
            "action_changed_after_block": 2,
            "max_consecutive_blocks": 2,
            "recovery_proxy_rate": 2 / 3,
            "repeated_block_proxy_rate": 1 / 3,
            "action_change_proxy_rate": 2 / 3,
        },
    )
    # Exits: one each; shares 1/2; balance (1 - 1/2) / (1 - 1/2) = 1.
    assert_same_json(m["exits"]["exit_shares"], {"e1": 0.5, "e2": 0.5})
    assert m["exits"]["exit_balance"] == 1.0
    # Exposure: fire at [2,0]. A: s0 [1,1] d2, s1 d2, s2 d2, s3 [0,1] d3.
    # B: s0 [1,3] d4, s1 d4, s2 [2,3] d3.  Histogram {2:3, 3:2, 4:2}.
    assert_same_json(m["fire_exposure"]["distance_histogram"], {"2": 3, "3": 2, "4": 2})
    assert m["fire_exposure"]["exposure_total"] == float(3 * 0.5 + 2 / 3 + 0.5)
    assert m["fire_exposure"]["min_fire_distance"] == 2
    assert m["people"]["A"]["fire_exposure"] == 3 / 2 + 1 / 3
    assert m["people"]["B"]["min_fire_distance"] == 3


def test_exact_rational_then_one_float():
    # A is 10 cells from the fire in s_0, s_1 and s_2: exposure 1/10 three times.
    # Summing floats gives 0.30000000000000004; the exact sum 3/10 rounds to 0.3.
    sc = picture_scenario(["*.........A1"], max_steps=10)
    m = metrics_of(sc, record_bytes(sc, scripted([{}, {}, {"A": "east"}])))
    assert_same_json(m["fire_exposure"]["distance_histogram"], {"10": 3})
    assert 0.1 + 0.1 + 0.1 != 0.3
    assert m["fire_exposure"]["exposure_total"] == 0.3
    assert m["people"]["A"]["fire_exposure"] == 0.3
    assert m["fire_exposure"]["mean_exposure"] == 0.1


# --------------------------------------------------------------------------
# metrics.md §13, row by row.


def test_nobody_evacuates():
    sc = picture_scenario(["A.#1"], max_steps=4)
    m = metrics_of(sc, record_bytes(sc, scripted([])))
    assert m["safety"]["stranded"] == 1
    assert m["time"]["mean_evacuation_step"] is None and m["time"]["median_evacuation_step"] is None
    assert m["time"]["first_evacuation_step"] is None
    assert m["time"]["person_time_to_safety_total"] == 1 * 4  # N * H
    assert m["path_efficiency"]["aggregate_path_efficiency"] is None
    assert m["path_efficiency"]["mean_path_efficiency"] is None
    assert m["exits"]["exit_shares"] is None and m["exits"]["exit_balance"] is None
    assert m["exits"]["max_exit_share"] is None
    # Walled off from every exit: static distance null; the person is trapped.
    assert m["people"]["A"]["static_exit_distance"] is None
    assert m["safety"]["terminal_trapped_count"] == 1


def test_one_exit_balance_null(corridor):
    assert corridor["exits"]["exit_balance"] is None


def test_no_movement_attempts_rates_null():
    sc = picture_scenario(["A.1"], max_steps=3)
    m = metrics_of(sc, record_bytes(sc, scripted([])))
    assert m["movement"]["movement_attempts"] == 0
    assert m["movement"]["blocked_rate"] is None and m["movement"]["congestion_block_rate"] is None
    assert m["movement"]["stay_rate"] == 1.0


def test_blocks_without_next_decision_rates_null():
    # A is blocked by the boundary at the last step: no next decision.
    sc = picture_scenario(["A.1"], max_steps=2)
    m = metrics_of(sc, record_bytes(sc, scripted([{}, {"A": "north"}])))
    r = m["replanning"]
    assert r["blocked_events"] == 1 and r["blocks_with_next_decision"] == 0 and r["blocks_without_next_decision"] == 1
    assert (
        r["recovery_proxy_rate"] is None
        and r["repeated_block_proxy_rate"] is None
        and r["action_change_proxy_rate"] is None
    )


def test_all_resolved_before_horizon_censors_at_h():
    # A evacuates at t1, B burns at t1 (p = 1): non-evacuee censored at H = 50, not T = 1.
    sc = picture_scenario(["A1", "*B"], max_steps=50, p="1/1")
    m = metrics_of(sc, record_bytes(sc, scripted([{"A": "east"}])))
    assert m["time"]["episode_steps"] == 1
    assert_same_json(m["safety"]["casualties_by_cause"], {"entered_fire": 0, "fire_spread": 1})
    assert m["people"]["B"]["time_to_safety"] == 50
    assert m["time"]["person_time_to_safety_total"] == 1 + 50
    assert m["people"]["B"]["resolution_step"] == 1 and m["people"]["B"]["casualty_cause"] == "fire_spread"


def test_entered_fire_casualty():
    sc = picture_scenario(["A*1"], max_steps=5, enter_fire="casualty")
    m = metrics_of(sc, record_bytes(sc, scripted([{"A": "east"}])))
    assert m["safety"]["casualties_by_cause"]["entered_fire"] == 1
    assert m["movement"]["successful_moves"] == 1  # a move into fire is 'moved'
    assert m["people"]["A"]["final_position"] == [0, 1]
    assert m["people"]["A"]["path_efficiency"] is None


@pytest.mark.parametrize(
    "cut, fragment",
    [
        (lambda d: d[: d.rindex(b"\n],")] + b"]", "the record is truncated"),
        (lambda d: b"", "the record is empty"),
        (lambda d: d[:-2], "the record is truncated"),
    ],
    ids=["ends after the steps", "empty", "last byte missing"],
)
def test_incomplete_records_are_rejected(cut, fragment):
    data = record_bytes(CORRIDOR, scripted(CORRIDOR_PLAN))
    with pytest.raises(ember.MetricsInputError, match=fragment):
        ember.episode_metrics(CORRIDOR, cut(data))


def test_record_that_stops_before_termination_is_rejected():
    # A complete JSON text whose last snapshot is not terminated.
    from helpers.records import encode, parts

    record = parts(record_bytes(CORRIDOR, scripted(CORRIDOR_PLAN)))
    record["steps"].pop()
    last = record["steps"][-1]["snapshot"]
    record["final_state"] = {k: last[k] for k in ("step", "people", "trapped", "termination_reason")}
    with pytest.raises(
        ember.MetricsInputError,
        match=r"^\$\.steps\[3\]\.snapshot\.terminated: the record ends at step 4 without termination",
    ):
        ember.episode_metrics(CORRIDOR, encode(record))


def test_result_serialises_canonically(fire_episode):
    from ember.canonical import canonical_json

    canonical_json(fire_episode)  # allow_nan=False: no NaN or infinity anywhere
    for family in ("safety", "time", "movement", "path_efficiency", "fire_exposure", "exits", "replanning"):
        for key, value in fire_episode[family].items():
            if key.endswith(
                (
                    "_rate",
                    "_share",
                    "mean_evacuation_step",
                    "median_evacuation_step",
                    "exposure_total",
                    "mean_exposure",
                    "_efficiency",
                    "_ratio",
                    "mean_person_time_to_safety",
                )
            ):
                assert value is None or type(value) is float, (family, key)


def test_to_dict_is_a_copy(fire_episode):
    result = ember.episode_metrics(FIRE, record_bytes(FIRE, scripted(FIRE_PLAN)))
    first = result.to_dict()
    first["safety"]["evacuated"] = -1
    assert result.to_dict()["safety"]["evacuated"] == 2


# --------------------------------------------------------------------------
# Streaming equals a plain batch computation, on built-ins and random episodes.


@pytest.mark.parametrize("name", ["small-room", "office", "bottleneck"])
@pytest.mark.parametrize("policy", ["greedy", "random", "stay"])
def test_builtins_match_batch(name, policy):
    sc = ember.load_scenario(f"builtin:{name}")
    out = io.BytesIO()
    ember.run_episode(sc, policy, 11, out)
    assert_same_json(metrics_of(sc, out.getvalue()), batch_metrics(sc, out.getvalue()))


@st.composite
def episodes(draw):
    rows = draw(st.integers(1, 6))
    cols = draw(st.integers(2, 6))
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    chosen = draw(st.lists(st.sampled_from(cells), min_size=2, max_size=len(cells), unique=True))
    n_exits = draw(st.integers(1, max(1, min(3, len(chosen) - 1))))
    exits = {f"x{k}": chosen[k] for k in range(n_exits)}
    rest = chosen[n_exits:]
    n_people = draw(st.integers(1, len(rest)))
    people = {f"p{k}": rest[k] for k in range(n_people)}
    others = rest[n_people:]
    n_walls = draw(st.integers(0, len(others)))
    walls = others[:n_walls]
    fire = others[n_walls : n_walls + draw(st.integers(0, 2))]
    from helpers.scenarios import make_scenario

    sc = make_scenario(
        rows,
        cols,
        people=people,
        exits=exits,
        walls=walls,
        ignitions=fire,
        p=draw(st.sampled_from(["0/1", "1/3", "1/2", "1/1"])),
        enter_fire=draw(st.sampled_from(["casualty", "block"])),
        max_steps=draw(st.integers(1, 25)),
    )
    return sc, draw(st.sampled_from(["greedy", "random", "stay"])), draw(st.integers(0, 2**64 - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes())
def test_random_episodes_match_batch(episode):
    sc, policy, seed = episode
    out = io.BytesIO()
    ember.run_episode(sc, policy, seed, out)
    data = out.getvalue()
    assert_same_json(metrics_of(sc, data), batch_metrics(sc, data))


def test_release_hands_over_what_to_dict_copies():
    copied = measure_run("builtin:office", "greedy", 3).metrics.to_dict()
    metrics = measure_run("builtin:office", "greedy", 3).metrics
    assert metrics.release() == copied
