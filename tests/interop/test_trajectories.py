"""PedPy's text trajectories of an episode, streamed: checked against a batch computation from the whole record."""

import gzip
import io
import json
import os
import subprocess
import sys
from fractions import Fraction

import pytest

from ember.errors import InteropError, MetricsInputError
from ember.generate import generate
from ember.interop.scale import Scale
from ember.interop.trajectories import write_trajectories
from ember.record.writer import run_episode
from ember.scenario import load_scenario
from ember.sim.policies import make_policy

from helpers.records import record_bytes, scripted
from helpers.scenarios import picture_scenario


def batch_rows(scenario, record, cell=Fraction(2, 5)):
    """The expected data rows, from the whole record in memory (the rules of docs/interop.md)."""
    data = json.loads(record)
    rows_count = scenario["grid"]["rows"]
    ids = {pid: k + 1 for k, pid in enumerate(sorted(p["person_id"] for p in scenario["people"]))}
    evacuated_at = {}
    for step in data["steps"]:
        for event in step["evacuations"]:
            evacuated_at[event["person_id"]] = step["step"]

    def centre(position):
        row, col = position
        return float((col + Fraction(1, 2)) * cell), float((rows_count - row - Fraction(1, 2)) * cell)

    rows = []
    states = [data["initial_state"]] + [step["snapshot"] for step in data["steps"]]
    for t, state in enumerate(states):
        for person in state["people"]:
            pid = person["person_id"]
            if person["status"] == "active" or evacuated_at.get(pid) in (t, t - 1):
                rows.append((ids[pid], t, *centre(person["position"]), 0))
    last = len(states) - 1
    for person in data["final_state"]["people"]:
        if evacuated_at.get(person["person_id"]) == last:
            rows.append((ids[person["person_id"]], last + 1, *centre(person["position"]), 0))
    return sorted(rows, key=lambda row: (row[1], row[0]))


def parse(text):
    """(header lines, data rows typed as written: int id, int frame, float x, float y, int z)."""
    header = [line for line in text.splitlines() if line.startswith("#")]
    rows = []
    for line in text.splitlines():
        if not line.startswith("#"):
            i, frame, x, y, z = line.split(" ")
            rows.append((int(i), int(frame), float(x), float(y), int(z)))
    return header, rows


def trajectories_text(scenario, record, scale=None):
    out = io.BytesIO()
    write_trajectories(scenario, record, out, scale)
    return out.getvalue().decode("ascii")


EPISODES = [
    ("office", lambda: load_scenario("builtin:office"), "greedy", 1),
    ("small-room", lambda: load_scenario("builtin:small-room"), "random", 2),
    (
        "multi-exit",
        lambda: generate("multi-exit", 1, rows=16, cols=18, people=20, exits=4, spread="1/20"),
        "planner",
        0,
    ),
    ("office-casualties", lambda: generate("office", 1, rows=16, cols=20, people=10, exits=2), "random", 1),
]


@pytest.mark.parametrize("factory, policy, seed", [e[1:] for e in EPISODES], ids=[e[0] for e in EPISODES])
def test_rows_match_a_batch_computation_from_the_whole_record(factory, policy, seed):
    scenario = factory()
    record = record_bytes(scenario, make_policy(policy, load_scenario(scenario), seed), seed)
    _, rows = parse(trajectories_text(scenario, record))
    assert rows == batch_rows(scenario, record)


def test_the_header_gives_pedpy_frame_rate_unit_and_the_id_of_each_person():
    scenario = picture_scenario(["b.0", "a.."], max_steps=3)
    header, _ = parse(trajectories_text(scenario, record_bytes(scenario, scripted([]))))
    assert header[0] == "#framerate: 3.3333333333333335"  # 1 / 0.3 s, the first header line
    assert [line for line in header if "framerate" in line] == [header[0]]
    assert any("x/m" in line for line in header)
    assert not any("x/cm" in line.lower() or "in cm" in line.lower() for line in header)
    assert header[-2:] == ["# 1 a", "# 2 b"]  # id k is the k-th person in ID order
    header, _ = parse(trajectories_text(scenario, record_bytes(scenario, scripted([])), Scale("1", "0.25")))
    assert header[0] == "#framerate: 4.0"
    assert "# grid 2 x 3 cells; 1 m cells, 0.25 s steps; one frame per step, frame t = step t" in header


def test_positions_are_cell_centres_in_metres_with_north_up():
    scenario = picture_scenario(["a..", "...", "..0"], max_steps=1)
    _, rows = parse(trajectories_text(scenario, record_bytes(scenario, scripted([])), Scale("0.5", "1")))
    assert rows[0] == (1, 0, 0.25, 1.25, 0)  # [0, 0]: the west end of the top row


def test_evacuees_stay_one_frame_at_the_exit_and_casualties_leave_before_their_step():
    scenario = picture_scenario(["a0.b*"], max_steps=3, p="0/1")
    # a evacuates at step 1; b moves into the fire at step 2 (entered_fire)
    record = record_bytes(scenario, scripted([{"a": "east"}, {"b": "east"}]))
    _, rows = parse(trajectories_text(scenario, record))
    frames = {}
    for i, frame, *_ in rows:
        frames.setdefault(i, []).append(frame)
    assert frames == {1: [0, 1, 2], 2: [0, 1]}


def test_compressed_records_give_the_same_file(tmp_path):
    scenario = load_scenario("builtin:small-room")
    plain, packed = tmp_path / "r.json", tmp_path / "r.json.gz"
    run_episode(scenario, "greedy", 4, plain)
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert trajectories_text(scenario, packed) == trajectories_text(scenario, plain)


def test_frames_are_written_while_the_record_is_still_being_read():
    """Streaming: most of the file exists before the record's last bytes have been read."""
    scenario = generate("office", 2, rows=16, cols=20, people=10, exits=2, max_steps=400)
    record = record_bytes(scenario, make_policy("stay", load_scenario(scenario), 0))
    out = io.BytesIO()
    sizes = []

    def chunks():
        for start in range(0, len(record), 4096):
            sizes.append(len(out.getvalue()))
            yield record[start : start + 4096]

    write_trajectories(scenario, chunks(), out)
    assert len(sizes) > 20
    assert sizes[-1] > 0.9 * len(out.getvalue())  # written before the last chunk was asked for


def test_a_live_pipe_from_ember_run(tmp_path):
    scenario_path = tmp_path / "scenario.json"
    scenario = generate("hall", 3, rows=14, cols=14, people=12, exits=3, door=2, pillars=4)
    scenario_path.write_text(json.dumps(scenario))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    command = [sys.executable, "-m", "ember.cli", "run", str(scenario_path), "--policy", "greedy", "--seed", "3"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env) as run:
        text = trajectories_text(scenario, run.stdout)
    assert run.returncode == 0
    record = record_bytes(scenario, make_policy("greedy", load_scenario(scenario), 3), 3)
    assert text == trajectories_text(scenario, record)


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: r[: len(r) // 2],  # truncated
        lambda r: r.replace(b'"seed":0', b'"seed":1', 1),  # replays differently: found at the end
        lambda r: r.replace(b'"outcome":"moved"', b'"outcome":"stayed"', 1),  # structure
    ],
    ids=["truncated", "replay-mismatch", "stage-2"],
)
def test_a_record_that_fails_leaves_no_file(damage, tmp_path):
    scenario = load_scenario("builtin:small-room")
    record = damage(record_bytes(scenario, make_policy("greedy", scenario, 0)))
    target = tmp_path / "new.txt"
    existing = tmp_path / "old.txt"
    existing.write_bytes(b"kept\n")
    for path in (target, existing):
        with pytest.raises(MetricsInputError):
            write_trajectories(scenario, record, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]
    assert existing.read_bytes() == b"kept\n"


@pytest.mark.parametrize("bad", [0, "0", -0.4, "-1", float("nan"), float("inf"), "nan", "", "x", True, "1e-4", 5000])
def test_a_bad_scale_is_refused_with_its_name(bad):
    with pytest.raises(InteropError, match=r"^cell_size must be"):
        Scale(cell_size=bad)
    with pytest.raises(InteropError, match=r"^step_seconds must be"):
        Scale(step_seconds=bad)


def test_scale_is_exact():
    scale = Scale(0.4, "0.3")
    assert (scale.cell_size, scale.step_seconds, scale.frame_rate) == (Fraction(2, 5), Fraction(3, 10), Fraction(10, 3))
    assert Scale(Fraction(1, 3), 1).describe() == "1/3 m cells, 1 s steps"
