"""The canonical-line front end joins a line held over chunks once, without its separator.

Whatever the chunking, and wherever a chunk ends (inside a line, between
its comma and its newline, right after its newline), a record gives what
it gives in one piece: its metrics when the lines are the replay's own
steps, the strict reader's outcome from the first line that is not.
"""

import io
import json

import pytest

import ember
from ember.canonical import canonical_json
from ember.engine.core import EpisodeEngine

SCENARIO = ember.load_scenario("builtin:small-room")
_out = io.BytesIO()
ember.run_episode(SCENARIO, "greedy", 0, _out)
RECORD = _out.getvalue()
LINES = RECORD.split(b"\n")


def with_step_line(k, line):
    lines = list(LINES)
    lines[3 + k] = line + (b"," if lines[3 + k].endswith(b",") else b"")
    return b"\n".join(lines)


def outcome_in_chunks(data, size):
    stream = ember.MetricsStream(SCENARIO)
    try:
        for start in range(0, len(data), size):
            stream.feed(data[start : start + size])
        return stream.close().to_dict()
    except ember.MetricsInputError as exc:
        return str(exc)


def whole_outcome(data):
    try:
        return ember.episode_metrics(SCENARIO, data).to_dict()
    except ember.MetricsInputError as exc:
        return str(exc)


STEP = json.loads(RECORD)["steps"][1]
MUTANTS = {
    "as written": RECORD,
    "same value, spaces": with_step_line(1, json.dumps(STEP).encode()),
    "another step number": with_step_line(1, canonical_json(dict(STEP, step=7))),
    "not json": with_step_line(1, b'{"actions":{"x'),
    "no comma after a step": RECORD.replace(LINES[4] + b"\n", LINES[4][:-1] + b"\n", 1),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_every_chunking_gives_the_outcome_of_the_whole_bytes(name, monkeypatch):
    data = MUTANTS[name]
    want = whole_outcome(data)
    with monkeypatch.context() as patch:
        patch.setattr(EpisodeEngine, "take_line", lambda self, index, line: False)
        assert whole_outcome(data) == want  # the strict reader alone agrees
    # Chunks whose first one ends at each offset near the first step lines' separators, and plain sizes.
    ends = [len(b"\n".join(LINES[: 3 + k])) + d for k in range(1, 4) for d in (-2, -1, 0, 1, 2)]
    sizes = sorted({1, 2, 3, 7, 64, 4096, *[e for e in ends if e > 0]})
    for size in sizes:
        assert outcome_in_chunks(data, size) == want, size


def test_every_chunking_takes_every_step_line_of_a_record_as_written(monkeypatch):
    taken = []
    original = EpisodeEngine.take_line

    def spy(self, index, line):
        taken.append(original(self, index, line))
        return taken[-1]

    want = whole_outcome(RECORD)
    monkeypatch.setattr(EpisodeEngine, "take_line", spy)
    steps = len(json.loads(RECORD)["steps"])
    ends = [len(b"\n".join(LINES[: 3 + k])) + d for k in range(1, 4) for d in (-2, -1, 0, 1, 2)]
    for size in sorted({1, 2, 3, 7, 64, *ends}):
        taken.clear()
        assert outcome_in_chunks(RECORD, size) == want
        assert taken == [True] * steps, size


def crowd_scenario(people, id_length=60):
    """An open square floor of ``people`` with long IDs and no fire spread: steps of about 330 bytes a person."""
    side = 2 * int(people**0.5) + 2
    cells = [[r, c] for r in range(1, side) for c in range(1, side) if (r + c) % 2 == 0][:people]
    return {
        "schema_version": "1.0",
        "scenario_id": "crowd",
        "grid": {"rows": side + 1, "cols": side + 1},
        "walls": [],
        "exits": [{"exit_id": "door", "position": [0, 0]}],
        "people": [{"person_id": f"p{k:0{id_length - 1}d}", "position": cell} for k, cell in enumerate(cells)],
        "fire": {"ignitions": [[side, side]], "spread_probability": "0/1", "enter_fire": "casualty"},
        "termination": {"max_steps": 2},
    }


def test_a_step_line_longer_than_4_mib_takes_the_fast_path(monkeypatch):
    scenario = crowd_scenario(14_000)
    out = io.BytesIO()
    ember.run_episode(scenario, "stay", 0, out)
    record = out.getvalue()
    lines = record.split(b"\n")
    assert min(len(line) for line in lines[3:5]) > 4 * 1024 * 1024  # both step lines, beyond the old ceiling
    want = ember.episode_metrics(scenario, record).to_dict()
    taken = []
    original = EpisodeEngine.take_line

    def spy(self, index, line):
        taken.append(original(self, index, line))
        return taken[-1]

    monkeypatch.setattr(EpisodeEngine, "take_line", spy)
    stream = ember.MetricsStream(scenario)
    for start in range(0, len(record), 1 << 16):  # a line arrives in many chunks and is joined once
        stream.feed(record[start : start + (1 << 16)])
    assert stream.close().to_dict() == want
    assert taken == [True, True]
