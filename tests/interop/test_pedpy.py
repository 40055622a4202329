"""EMBER episodes in the real PedPy: its crossing counts at each exit are EMBER's evacuations.

For each episode, ``pedpy.compute_n_t`` on every measurement line of an
exit, summed over the exit's lines, must give exactly the evacuation steps
of the people EMBER's metrics say left through that exit
(``time.evacuation_steps`` and the per-person ``exit_id``), and the
trajectories must lie in the walkable area (``is_trajectory_valid``).
"""

import collections
import json
import sys
from fractions import Fraction

import pytest

from ember import episode_metrics
from ember.errors import InteropError, MetricsInputError
from ember.generate import generate
from ember.interop.geometry import geometry_document
from ember.interop.scale import Scale
from ember.interop.trajectories import write_trajectories
from ember.record.writer import run_episode
from ember.scenario import load_scenario
from ember.sim.policies import make_policy

from helpers.records import record_bytes, scripted
from helpers.scenarios import picture_scenario

if sys.version_info < (3, 11):  # PedPy needs Python 3.11; CI's Python has it, so there these tests run
    pedpy = pytest.importorskip("pedpy", reason="PedPy needs Python 3.11 or later")
else:
    import pedpy

from ember.interop.pedpy import load  # noqa: E402


def builtin(name):
    return load_scenario(f"builtin:{name}")


# (id, scenario factory, policy, seed): built-in and generated floors, both enter_fire modes,
# every built-in policy; what each case must contain is checked by test_the_cases_cover_what_matters.
CASES = [
    ("office-greedy", lambda: builtin("office"), "greedy", 1),
    ("bottleneck-greedy", lambda: builtin("bottleneck"), "greedy", 0),
    ("small-room-planner", lambda: builtin("small-room"), "planner", 3),
    ("small-room-random", lambda: builtin("small-room"), "random", 5),
    ("v1-small-multi-exit-block-planner", lambda: builtin("ember-v1/small-multi-exit-block"), "planner", 0),
    ("v1-small-office-casualty-greedy", lambda: builtin("ember-v1/small-office-casualty"), "greedy", 2),
    (
        "multi-exit-planner",
        lambda: generate("multi-exit", 0, rows=16, cols=18, people=20, exits=4, spread="1/20"),
        "planner",
        0,
    ),
    (
        "multi-exit-block-greedy",
        lambda: generate("multi-exit", 1, rows=16, cols=18, people=20, exits=4, spread="1/20", enter_fire="block"),
        "greedy",
        1,
    ),
    (
        "hall-doors-greedy",
        lambda: generate("hall", 1, rows=14, cols=14, people=12, exits=3, door=2, pillars=4),
        "greedy",
        1,
    ),
    (
        "bottleneck-block-greedy",
        lambda: generate("bottleneck", 1, rows=12, cols=14, people=20, width=2, exits=2, enter_fire="block"),
        "greedy",
        1,
    ),
    ("office-random", lambda: generate("office", 1, rows=16, cols=20, people=10, exits=2), "random", 1),
]


def policy_record(scenario, policy, seed, tmp_path):
    path = tmp_path / "record.json"
    run_episode(scenario, policy, seed, path)
    return path


def ember_evacuations(metrics):
    """{exit_id: Counter(evacuation step -> evacuees)} from EMBER's metrics."""
    by_exit = collections.defaultdict(collections.Counter)
    for person_id, step in metrics["time"]["evacuation_steps"].items():
        by_exit[metrics["people"][person_id]["exit_id"]][step] += 1
    return by_exit


def pedpy_crossings(trajectories, lines):
    """{exit_id: Counter(frame -> crossings)} summed over each exit's lines, and every (id, frame) crossing."""
    by_exit, crossings = {}, []
    for exit_id, exit_lines in lines.items():
        counts = collections.Counter()
        for line in exit_lines:
            n_t, frames = pedpy.compute_n_t(traj_data=trajectories, measurement_line=line)
            counts.update(int(frame) for frame in frames["frame"])
            crossings += [(int(i), int(f)) for i, f in zip(frames["id"], frames["frame"])]
            # n-t's last cumulative count is the line's number of crossers
            assert int(n_t["cumulative_pedestrians"].iloc[-1]) == len(frames)
        by_exit[exit_id] = counts
    return by_exit, crossings


def check_episode(scenario, record):
    metrics = episode_metrics(scenario, record).to_dict()
    trajectories, walkable_area, lines = load(scenario, record)
    assert sorted(lines) == sorted(e["exit_id"] for e in scenario["exits"])
    assert pedpy.is_trajectory_valid(traj_data=trajectories, walkable_area=walkable_area)
    assert trajectories.frame_rate == float(Fraction(10, 3))
    by_exit, crossings = pedpy_crossings(trajectories, lines)
    expected = ember_evacuations(metrics)
    for exit_id in lines:
        assert by_exit[exit_id] == expected.get(exit_id, collections.Counter()), exit_id
    # each evacuee crosses one line once; nobody else crosses any
    ids = {pid: k + 1 for k, pid in enumerate(sorted(metrics["people"]))}
    evacuees = {ids[pid]: step for pid, step in metrics["time"]["evacuation_steps"].items()}
    assert sorted(crossings) == sorted(evacuees.items())
    assert sum(metrics["exits"]["evacuations_per_exit"].values()) == len(crossings)
    return metrics


@pytest.mark.parametrize("factory, policy, seed", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_pedpy_counts_each_exit_s_evacuations_at_their_steps(factory, policy, seed, tmp_path):
    scenario = factory()
    check_episode(scenario, policy_record(scenario, policy, seed, tmp_path))


def test_the_cases_cover_what_matters():
    """Both enter_fire modes, casualties of both causes, stranded people, several exits, every policy."""
    from ember.engine.run import measure_run

    seen = collections.Counter()
    for _, factory, policy, seed in CASES:
        scenario = factory()
        metrics = measure_run(scenario, policy, seed).metrics.to_dict()
        safety = metrics["safety"]
        seen["mode " + scenario["fire"]["enter_fire"]] += 1
        seen["policy " + policy] += 1
        seen["entered_fire"] += safety["casualties_by_cause"]["entered_fire"]
        seen["fire_spread"] += safety["casualties_by_cause"]["fire_spread"]
        seen["stranded"] += safety["stranded"]
        seen["several exits used"] += sum(1 for n in metrics["exits"]["evacuations_per_exit"].values() if n) > 1
    for what in ("mode block", "mode casualty", "policy greedy", "policy random", "policy planner"):
        assert seen[what] >= 2, what
    for what in ("entered_fire", "fire_spread", "stranded", "several exits used"):
        assert seen[what] >= 1, what


# --- hand-drawn floors for the geometric cases ---------------------------------------


def test_an_exit_entered_from_all_four_sides_counts_each_evacuee_once():
    # the exit 0 in the middle; people arrive from north, west, east and south (one a step: two
    # moving onto one cell in the same step would both be blocked_conflict)
    scenario = picture_scenario(
        [
            "..a..",
            ".....",
            "b.0.c",
            ".....",
            "..d..",
        ],
        max_steps=10,
    )
    plan = [
        {"a": "south", "b": "east", "c": "west", "d": "north"},
        {"a": "south"},  # step 2: a, from the north
        {"b": "east"},  # step 3: b, from the west
        {"c": "west"},  # step 4: c, from the east
        {"d": "north"},  # step 5: d, from the south
    ]
    record = record_bytes(scenario, scripted(plan))
    metrics = check_episode(scenario, record)
    assert metrics["time"]["evacuation_steps"] == {"a": 2, "b": 3, "c": 4, "d": 5}
    trajectories, _, lines = load(scenario, record)
    assert len(lines["e0"]) == 4
    per_line = [len(pedpy.compute_n_t(traj_data=trajectories, measurement_line=line)[1]) for line in lines["e0"]]
    assert per_line == [1, 1, 1, 1]  # north, south, west, east: one evacuee through each side


def test_adjacent_exits_a_last_step_evacuation_and_a_sealed_room():
    # exits 1 and 2 side by side; z sealed in a room with no exit (stranded; two walkable regions)
    scenario = picture_scenario(
        [
            "#12#####",
            "#..#...#",
            "#ab#.z.#",
            "#..#...#",
            "########",
        ],
        max_steps=3,
    )
    plan = [{"a": "north", "b": "north"}, {"a": "north", "b": "north"}, {}]
    record = record_bytes(scenario, scripted(plan))
    metrics = check_episode(scenario, record)
    assert metrics["time"]["evacuation_steps"] == {"a": 2, "b": 2}
    assert metrics["safety"]["stranded"] == 1
    assert geometry_document(scenario)["walkable_regions"] == 2


def test_an_evacuation_at_the_very_last_step_is_counted():
    scenario = picture_scenario(["a.0"], max_steps=2)
    record = record_bytes(scenario, scripted([{"a": "east"}, {"a": "east"}]))
    metrics = check_episode(scenario, record)
    assert metrics["time"]["episode_steps"] == 2
    assert metrics["time"]["evacuation_steps"] == {"a": 2}
    trajectories, _, _ = load(scenario, record)
    assert int(trajectories.data["frame"].max()) == 3  # the evacuee's frame past the episode


@pytest.mark.parametrize("enter_fire", ["casualty", "block"])
def test_a_move_onto_a_burning_exit_is_no_crossing(enter_fire):
    # exit 0 burns from the start: under casualty a dies on it (entered_fire), under block it is held back;
    # b leaves through exit 1; c stays, so the episode (and a trajectory that wrongly went on) lasts
    scenario = picture_scenario(
        ["a0..1b.c"],
        ignitions=[(0, 1)],
        p="0/1",
        enter_fire=enter_fire,
        max_steps=3,
    )
    record = record_bytes(scenario, scripted([{"a": "east", "b": "west"}]))
    metrics = check_episode(scenario, record)
    causes = metrics["safety"]["casualties_by_cause"]
    assert causes["entered_fire"] == (1 if enter_fire == "casualty" else 0)
    assert metrics["time"]["evacuation_steps"] == {"b": 1}


def test_pedpy_reads_the_frame_rate_and_the_metres_of_any_scale(tmp_path):
    scenario = builtin("small-room")
    record = record_bytes(scenario, make_policy("greedy", load_scenario(scenario), 0))
    trajectories, walkable_area, lines = load(scenario, record, cell_size="0.5", step_seconds="0.25")
    assert trajectories.frame_rate == 4.0
    assert walkable_area.area == pytest.approx(0.25 * (8 * 10 - len(scenario["walls"])))
    # the same file read by PedPy directly
    path = tmp_path / "t.txt"
    write_trajectories(scenario, record, path, Scale("0.5", "0.25"))
    direct = pedpy.load_trajectory_from_txt(trajectory_file=path)
    assert direct.data[["id", "frame", "x", "y"]].equals(trajectories.data[["id", "frame", "x", "y"]])
    document = geometry_document(scenario, Scale("0.5", "0.25"))
    assert pedpy.WalkableArea(document["walkable_area"]).polygon.equals(walkable_area.polygon)
    assert json.loads(json.dumps(document)) == document


@pytest.mark.parametrize("bad", [0, -1, "0", "-0.4", float("nan"), float("inf"), "inf", "abc", True, None])
def test_load_refuses_a_bad_scale_before_reading(bad):
    scenario = builtin("small-room")
    with pytest.raises(InteropError, match="cell_size"):
        load(scenario, b"never read", cell_size=bad)
    with pytest.raises(InteropError, match="step_seconds"):
        load(scenario, b"never read", step_seconds=bad)


def test_load_refuses_a_record_that_fails_validation():
    scenario = builtin("small-room")
    record = record_bytes(scenario, make_policy("greedy", load_scenario(scenario), 0))
    with pytest.raises(MetricsInputError):
        load(scenario, record[: len(record) // 2])
