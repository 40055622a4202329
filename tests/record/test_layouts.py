"""Records in other layouts: the replayed-step fast path of
``record/layouts.py`` takes their steps, and changes nothing else.

Every case is read twice: as EMBER reads it, and with the fast path turned
off (every step through the strict reader, as before the fast path).  Valid
records give type-identical metrics, defective ones the identical error.
"""

import json
import re

import pytest

import ember
from ember.engine.core import EpisodeEngine
from ember.sim.policies import make_policy

from helpers.records import record_bytes
from helpers.replayed import CUT_OFF, CUT_OFF_RECORD, replayed_flags, same_typed


def dumper(layout):
    return {
        "pretty": lambda v, level: json.dumps(v, indent=1).replace("\n", "\n" + " " * level),
        "sorted": lambda v, level: json.dumps(v, sort_keys=True),
        "spaced": lambda v, level: json.dumps(v, separators=(" ,", ": ")).replace("[", "[ \r\n"),
        "tabs": lambda v, level: json.dumps(v, indent="\t").replace("\n", "\r\n" + "\t" * level),
        "escaped": lambda v, level: json.dumps(v, separators=(",", ":")).replace('"person_id"', '"\\u0070erson_id"'),
    }[layout]


LAYOUTS = ("pretty", "sorted", "spaced", "tabs", "escaped")


def layout_text(record, layout, edit=None, at=None):
    """``record`` in ``layout``; ``edit(text)`` rewrites the text of step ``at`` (0-based)."""
    dump = dumper(layout)
    steps = [dump(step, 2) for step in record["steps"]]
    if edit is not None:
        edited = edit(steps[at])
        assert edited != steps[at], "the edit must change the step's text"
        steps[at] = edited
    parts = {key: dump(record[key], 1) for key in ("header", "initial_state", "final_state")}
    body = "[\n  " + ",\n  ".join(steps) + "\n ]"
    order = ("header", "initial_state", "steps", "final_state")
    if layout == "sorted":
        order = tuple(sorted(order))
    members = [f'"{key}": ' + (body if key == "steps" else parts[key]) for key in order]
    return ("{\n " + ",\n ".join(members) + "\n}\n").encode()


def strict_only(monkeypatch):
    monkeypatch.setattr(EpisodeEngine, "take_line", lambda self, index, line: False)


def outcome(scenario, data):
    """The metrics dict, or the error's class and message."""
    try:
        return ember.episode_metrics(scenario, data).to_dict()
    except ember.MetricsInputError as exc:
        return (type(exc).__name__, str(exc))


def both_ways(monkeypatch, scenario, data):
    fast = outcome(scenario, data)
    with monkeypatch.context() as patch:
        strict_only(patch)
        strict = outcome(scenario, data)
    return fast, strict


def episode(name, policy, seed):
    scenario = ember.load_scenario(f"builtin:{name}")
    sim = ember.Simulator(scenario, seed)
    data = record_bytes(scenario, make_policy(policy, sim.scenario, seed), seed)
    return scenario, json.loads(data)


@pytest.fixture(scope="module")
def room():
    return episode("small-room", "random", 0)  # 20 steps, fire spreading


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "name, policy, seed", [("small-room", "random", 0), ("office", "greedy", 3), ("bottleneck", "random", 2)]
)
def test_every_step_is_taken_and_the_metrics_are_the_strict_paths(monkeypatch, layout, name, policy, seed):
    scenario, record = episode(name, policy, seed)
    data = layout_text(record, layout)
    assert json.loads(data) == record
    flags = replayed_flags(monkeypatch)
    fast, strict = both_ways(monkeypatch, scenario, data)
    assert flags[: len(record["steps"])] == [True] * len(record["steps"])
    assert isinstance(fast, dict) and same_typed(fast, strict)
    assert same_typed(
        fast,
        ember.episode_metrics(
            scenario,
            ember.canonical.canonical_record(
                record["header"], record["initial_state"], record["steps"], record["final_state"]
            ),
        ).to_dict(),
    )


def first(old, new):
    return lambda text: text.replace(old, new, 1)


# Edits of one step's text: each either breaks a strictness rule of
# simulator.md §5 (or a stage-2 rule), or keeps the same record.
STEP_EDITS = {
    "duplicate key": lambda text: text.replace("{", '{"step": 0, ', 1),
    "duplicate key, same value": lambda text: text.replace('"step"', '"step": 7, "step"', 1),
    "non-integer": lambda text: text.replace('"step": 7', '"step": 7.0', 1),
    "exponent": lambda text: text.replace('"step": 7', '"step": 7e0', 1),
    "NaN": lambda text: text.replace('"step": 7', '"step": NaN', 1),
    "huge integer": lambda text: text.replace('"step": 7', '"step": 7' + "0" * 60, 1),
    "true for an integer": lambda text: text.replace('"step": 7', '"step": true', 1),
    "escaped ID (same value)": lambda text: text.replace('"p', '"\\u0070', 1),
    "control character": lambda text: text.replace('"stay"', '"st\x01ay"', 1),
    "non-ASCII blank": lambda text: text.replace('"step"', '\u00a0"step"', 1),
    "extra key": lambda text: text.replace("{", '{"extra": 1, ', 1),
    "deep nesting": lambda text: text.replace("{", '{"x": ' + "[" * 40 + "]" * 40 + ", ", 1),
    "colon in a string": lambda text: text.replace('"stay"', '"st:ay"', 1),
    "outcome of a stay": lambda text: text.replace('"stayed"', '"blocked_wall"', 1),
    "bad trapped set": lambda text: re.sub(r'"trapped": \[[^\]]*\]', '"trapped": ["nobody"]', text, count=1),
}


@pytest.mark.parametrize("layout", ["pretty", "sorted", "spaced"])
@pytest.mark.parametrize("edit", list(STEP_EDITS))
def test_a_step_defect_gives_the_strict_readers_outcome(monkeypatch, room, layout, edit):
    scenario, record = room
    data = layout_text(record, layout, STEP_EDITS[edit], at=6)  # steps 1-6 are taken first
    fast, strict = both_ways(monkeypatch, scenario, data)
    assert fast == strict if isinstance(fast, tuple) else same_typed(fast, strict)


RECORD_EDITS = {
    "steps first": lambda text: text.replace('"header"', '"hdr"', 1),
    "trailing data": lambda text: text + "x",
    "byte-order mark": lambda text: "\ufeff" + text,
    "truncated in a step": lambda text: text[: len(text) * 2 // 3],
    "a step nested one level down": lambda text: text.replace("[\n  {", "[\n  [{", 1).replace("}\n ]", "}]\n ]", 1),
    "steps twice": lambda text: text.replace('"final_state"', '"steps": [], "final_state"', 1),
    "extra top-level key": lambda text: text.replace("{", '{"x": 1, ', 1),
    "missing comma between steps": lambda text: text.replace("},\n  {", "}\n  {", 1),
}


@pytest.mark.parametrize("layout", ["pretty", "sorted"])
@pytest.mark.parametrize("edit", list(RECORD_EDITS))
def test_a_record_defect_gives_the_strict_readers_outcome(monkeypatch, room, layout, edit):
    scenario, record = room
    text = layout_text(record, layout).decode()
    assert RECORD_EDITS[edit](text) != text, "the edit must change the text"
    data = RECORD_EDITS[edit](text).encode()
    fast, strict = both_ways(monkeypatch, scenario, data)
    assert isinstance(strict, tuple), strict  # each of these is a defect
    assert fast == strict


@pytest.mark.parametrize("layout", ["pretty", "sorted", "spaced"])
def test_minus_zero_is_an_integer_on_both_paths(monkeypatch, layout):
    # simulator.md §1: an integer is -?(0|[1-9][0-9]*), so -0 is one (the value 0).
    scenario, record = CUT_OFF, json.loads(json.dumps(CUT_OFF_RECORD))
    data = layout_text(record, layout, lambda text: re.sub(r"(\[\s*)0(\s*,)", r"\1-0\2", text, count=1), at=1)
    flags = replayed_flags(monkeypatch)
    fast, strict = both_ways(monkeypatch, scenario, data)
    assert isinstance(fast, dict) and same_typed(fast, strict)
    assert flags[:4] == [True] * 4


@pytest.mark.parametrize("layout", ["pretty", "sorted"])
def test_any_chunking_gives_the_same_outcome(room, layout):
    scenario, record = room
    data = layout_text(record, layout)
    expected = ember.episode_metrics(scenario, data).to_dict()
    for size in (1, 7, 4096):
        stream = ember.MetricsStream(scenario)
        for start in range(0, len(data), size):
            stream.feed(data[start : start + size])
        assert same_typed(stream.close().to_dict(), expected)
