"""The one record-reading entry point and the simulator-driven entry point."""

import gzip
import hashlib
import io
import json
import os
import sys

import pytest

import ember
from ember.cli import main
from ember.engine import core as engine_core
from ember.engine import replay as engine_replay
from ember.engine.run import measure_run
from ember.record import pipeline, reader
from ember.record.parts import iter_parts
from ember.render import ASCII, render_ascii

from helpers.hostile_input import LIMITED, LIMITED_RECORD
from helpers.records import record_bytes, scripted
from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json


def same_typed(a, b, path="$"):
    """Equal values of equal types all the way down (``1``, ``1.0`` and ``True`` differ)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for key in a:
            same_typed(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: length {len(a)} vs {len(b)}"
        for j, (x, y) in enumerate(zip(a, b)):
            same_typed(x, y, f"{path}[{j}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def test_same_typed_tells_types_apart():
    for a, b in ((1, 1.0), (1, True), ({"a": [0]}, {"a": [False]}), (None, 0)):
        with pytest.raises(AssertionError):
            same_typed(a, b)


# --- measure_run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "policy", "seed"),
    [
        ("small-room", "greedy", 0),
        ("small-room", "random", 7),
        ("office", "greedy", 3),
        ("office", "random", 2**64 - 1),
        ("bottleneck", "greedy", 11),
        ("bottleneck", "stay", 5),
        ("small-room", "stay", 1),
    ],
)
def test_measure_run_equals_episode_metrics_of_its_record(name, policy, seed):
    scenario = ember.load_scenario(f"builtin:{name}")
    written = io.BytesIO()
    measured = measure_run(scenario, policy, seed, written)
    expected = io.BytesIO()
    ember.run_episode(scenario, policy, seed, expected)
    assert written.getvalue() == expected.getvalue()
    same_typed(measured.metrics.to_dict(), ember.episode_metrics(scenario, expected.getvalue()).to_dict())
    assert_same_json(measured.final_state, json.loads(expected.getvalue())["final_state"])
    assert measured.record_sha256 == hashlib.sha256(expected.getvalue()).hexdigest()
    unwritten = measure_run(scenario, policy, seed)
    same_typed(unwritten.metrics.to_dict(), measured.metrics.to_dict())
    assert_same_json(unwritten.final_state, measured.final_state)
    assert unwritten.record_sha256 is None  # no record, nothing encoded


def test_measure_run_with_a_callable_policy_and_a_path(tmp_path):
    scenario = picture_scenario(["A..*", "B..1", "...."], max_steps=12, p="1/2")
    plan = [{"A": "south", "B": "east"}, {"A": "east", "B": "east"}] + [{"A": "east"}] * 10
    path = tmp_path / "run.record"
    measured = measure_run(scenario, scripted(plan), 4, path)
    data = record_bytes(scenario, scripted(plan), 4)
    assert path.read_bytes() == data
    same_typed(measured.metrics.to_dict(), ember.episode_metrics(scenario, data).to_dict())
    assert_same_json(measured.final_state, json.loads(data)["final_state"])
    assert measured.record_sha256 == hashlib.sha256(data).hexdigest()
    whole = tmp_path / "whole.record.gz"  # live=False: complete or not at all, compressed by the name
    assert measure_run(scenario, scripted(plan), 4, whole, live=False).record_sha256 == measured.record_sha256
    assert gzip.decompress(whole.read_bytes()) == data


def test_measure_run_refuses_illegal_actions_like_run_episode():
    scenario = picture_scenario(["A..1"], max_steps=5)
    with pytest.raises(ember.ActionError, match="no action for active person 'A'"):
        measure_run(scenario, lambda observation: {}, 0)
    with pytest.raises(ember.ActionError, match="unknown action 'up'"):
        measure_run(scenario, lambda observation: {"A": "up"}, 0)
    with pytest.raises(ember.ScenarioError):
        measure_run({"schema_version": "1.0"}, "greedy", 0)


# --- one way in ----------------------------------------------------------------------


@pytest.fixture
def builders(monkeypatch):
    """Where every strict reader was built from, and how many bytes entered through ``RecordInput``."""
    seen = {"parsers": [], "bytes": 0}
    make_parser, feed = reader.RecordParser.__init__, pipeline.RecordInput.feed

    def spy_parser(self, *args, **kwargs):
        seen["parsers"].append(os.path.basename(sys._getframe(1).f_code.co_filename))
        make_parser(self, *args, **kwargs)

    def spy_feed(self, chunk):
        seen["bytes"] += len(chunk)
        feed(self, chunk)

    monkeypatch.setattr(reader.RecordParser, "__init__", spy_parser)
    monkeypatch.setattr(pipeline.RecordInput, "feed", spy_feed)
    return seen


SCENARIO = picture_scenario(["A....", ".#.#.", "B...1"], ignitions=[(0, 4)], max_steps=30, p="1/3")


@pytest.fixture(scope="module")
def record():
    data = io.BytesIO()
    ember.run_episode(SCENARIO, "greedy", 3, data)
    return data.getvalue()


def _readers(record, tmp_path):
    stream = ember.MetricsStream(SCENARIO)
    scenario_file = tmp_path / "scenario.json"
    scenario_file.write_text(json.dumps(SCENARIO))
    record_file = tmp_path / "x.record"
    record_file.write_bytes(record)
    return {
        "episode_metrics": lambda: ember.episode_metrics(SCENARIO, record),
        "MetricsStream": lambda: (stream.feed(record), stream.close()),
        "verify_replay": lambda: ember.verify_replay(SCENARIO, record),
        "render_ascii": lambda: render_ascii(SCENARIO, record),
        "iter_parts": lambda: list(iter_parts(record)),
        "cli metrics": lambda: main(["metrics", str(scenario_file), str(record_file)]),
        "cli replay": lambda: main(["replay", str(scenario_file), str(record_file)]),
        "cli render": lambda: main(["render", "--ascii", str(scenario_file), str(record_file)]),
    }


def _ascii_picture(scenario, snapshot):
    """The last frame as ``ember render --ascii`` documents it, drawn here from the record's own snapshot."""
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    cells = [[ASCII["floor"]] * cols for _ in range(rows)]
    for row, col in scenario["walls"]:
        cells[row][col] = ASCII["wall"]
    for exit_ in scenario["exits"]:
        cells[exit_["position"][0]][exit_["position"][1]] = ASCII["exit"]
    for row, col in snapshot["burning"]:
        cells[row][col] = ASCII["fire"]
    rank = {"evacuated": 1, "casualty": 2, "active": 3, "trapped": 4}  # the higher wins a shared cell
    shown = {}
    for person in snapshot["people"]:
        kind = "trapped" if person["person_id"] in snapshot["trapped"] else person["status"]
        cell = tuple(person["position"])
        if rank[kind] > rank.get(shown.get(cell), 0):
            shown[cell] = kind
    for (row, col), kind in shown.items():
        cells[row][col] = ASCII[kind]
    return "\n".join("".join(line) for line in cells)


def _expected_outcome(name, record):
    """A check of what reader ``name`` gives for ``record``: (outcome, captured stdout/stderr) -> asserts.

    The metrics come from the simulator-driven path (``measure_run``, no
    record read), the parts from ``json.loads`` of the whole text, the
    picture from the record's last snapshot.
    """
    metrics = measure_run(SCENARIO, "greedy", 3).metrics.to_dict()
    whole = json.loads(record)
    parts = [("header", whole["header"]), ("initial_state", whole["initial_state"])]
    parts += [("step", index, step) for index, step in enumerate(whole["steps"])]
    parts.append(("final_state", whole["final_state"]))
    picture = _ascii_picture(SCENARIO, whole["steps"][-1]["snapshot"])

    def check(outcome, captured):
        if name == "episode_metrics":
            assert_same_json(outcome.to_dict(), metrics)
        elif name == "MetricsStream":
            assert outcome[0] is None  # feed() returns nothing
            assert_same_json(outcome[1].to_dict(), metrics)  # close() the metrics
        elif name == "verify_replay":
            assert outcome is None
        elif name == "render_ascii":
            assert outcome == picture
        elif name == "iter_parts":
            assert len(outcome) == len(parts)
            for got, want in zip(outcome, parts):
                assert got[:-1] == want[:-1]
                assert_same_json(got[-1], want[-1])
        elif name == "cli metrics":
            assert outcome == 0
            assert_same_json(json.loads(captured.out), metrics)
        elif name == "cli replay":
            assert outcome == 0 and captured.out == ""
            assert captured.err == "ember: the record replays byte-identically.\n"
        else:
            assert name == "cli render"
            assert outcome == 0 and captured.out == picture + "\n"

    return check


@pytest.mark.parametrize(
    "name",
    [
        "episode_metrics",
        "MetricsStream",
        "verify_replay",
        "render_ascii",
        "iter_parts",
        "cli metrics",
        "cli replay",
        "cli render",
    ],
)
def test_every_reader_comes_in_through_the_one_entry_point(name, record, builders, tmp_path, capsys):
    outcome = _readers(record, tmp_path)[name]()
    _expected_outcome(name, record)(outcome, capsys.readouterr())
    assert builders["bytes"] == len(record)
    assert builders["parsers"] and set(builders["parsers"]) <= {"pipeline.py", "frontend.py"}


@pytest.mark.parametrize("name", ["episode_metrics", "MetricsStream", "verify_replay", "render_ascii"])
def test_canonical_records_take_the_fast_path_in_every_reader(name, record, monkeypatch, tmp_path):
    strict_steps = []
    monkeypatch.setattr(engine_core.EpisodeEngine, "step", lambda self, index, value: strict_steps.append(index))
    monkeypatch.setattr(engine_replay._ReplaySink, "step", lambda self, index, value: strict_steps.append(index))
    _readers(record, tmp_path)[name]()
    assert strict_steps == []


def test_render_sees_every_state_of_the_fast_path(record):
    steps = record.count(b"\n") - 5  # five newlines frame the canonical record
    frames = [render_ascii(SCENARIO, record, t) for t in range(steps + 1)]
    assert frames[-1] == render_ascii(SCENARIO, record)
    # Each frame drawn from the parsed snapshot, apart from the engine.
    states = [value for kind, *rest in iter_parts(record) for value in rest[-1:] if kind in ("initial_state", "step")]
    for t, state in enumerate(states):
        snapshot = state if t == 0 else state["snapshot"]
        positions = {tuple(p["position"]) for p in snapshot["people"] if p["status"] == "active"}
        lines = frames[t].split("\n")
        for row, col in positions:
            assert lines[row][col] in "@T"


def test_regression_metrics_stream_converted_non_bytes_chunks():
    # feed(5) was taken as five NUL bytes (bytes(5)); feed("text") raised TypeError.
    for chunk in (5, 10**12, "text", [123], None, 1.5):
        stream = ember.MetricsStream(LIMITED)
        with pytest.raises(ember.MetricsInputError, match=r"^\$: a record chunk must be bytes"):
            stream.feed(chunk)
    stream = ember.MetricsStream(LIMITED)
    stream.feed(bytearray(LIMITED_RECORD[:100]))
    stream.feed(memoryview(LIMITED_RECORD)[100:])
    assert_same_json(stream.close().to_dict(), ember.episode_metrics(LIMITED, LIMITED_RECORD).to_dict())
