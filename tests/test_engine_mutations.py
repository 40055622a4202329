"""Mutations of valid records (ember.engine): fail closed under hostile input.

No mutant of a valid record may crash the engine with anything but
``MetricsInputError``, or get a result for a record the simulator could not
have written: every mutant is refused or is the same JSON value and gives the
same metrics, through ``episode_metrics`` and ``MetricsStream`` alike.
Resource limits are in record/test_limits.py, scenario fuzzing in
test_scenario_fuzzing.py, the command line in test_cli_bad_records.py.
"""

import copy
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json, canonical_record

from helpers.hostile_input import (
    EXAMPLES,
    JSONISH,
    SMALL,
    all_places,
    check_mutant,
    episodes,
    run,
    same_value,
    scenarios,
    set_at,
)

# --- 1. mutations of valid records ----------------------------------------------


def replacement_values(old):
    values = [
        None,
        True,
        False,
        0,
        1,
        -1,
        2**64,
        10**40,
        "",
        "x",
        "stay",
        "moved",
        "active",
        [],
        {},
        [0, 0],
        [[0, 0]],
        "1.0",
    ]
    if type(old) is int:
        values += [old + 1, old - 1, -old]
    if isinstance(old, list):
        values += [old[:-1], old + old[-1:], old[::-1]] if old else [[0]]
    if isinstance(old, dict) and old:
        key = sorted(old)[0]
        values += [{k: v for k, v in old.items() if k != key}, {**old, "extra": 1}]
    if isinstance(old, str):
        values += [old + "x", old.upper(), old[:-1]]
    return values


def encodings(record, rng):
    """The canonical record bytes, and a non-canonical json.dumps of the same value."""
    canonical = canonical_record(record["header"], record["initial_state"], record["steps"], record["final_state"])
    loose = json.dumps(record, indent=rng.choice((None, 1, 2)), sort_keys=rng.random() < 0.5).encode()
    return [canonical, loose]


@st.composite
def mutants(draw, data):
    """One mutant of the record bytes ``data``; may be several byte strings (encodings)."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    record = json.loads(data)
    kind = draw(
        st.sampled_from(
            [
                "flip",
                "delete",
                "insert",
                "splice",
                "truncate",
                "duplicate_line",
                "drop_line",
                "swap_lines",
                "field",
                "reorder",
                "swap_steps",
                "whitespace",
            ]
        )
    )
    n = len(data)
    if kind == "flip":
        at = draw(st.integers(0, n - 1))
        return kind, [data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]]
    if kind == "delete":
        at = draw(st.integers(0, n - 1))
        return kind, [data[:at] + data[at + draw(st.integers(1, 20)) :]]
    if kind == "insert":
        at = draw(st.integers(0, n))
        text = bytes(draw(st.lists(st.sampled_from(JSONISH), min_size=1, max_size=6)))
        return kind, [data[:at] + text + data[at:]]
    if kind == "truncate":
        return kind, [data[: draw(st.integers(0, n - 1))]]
    if kind == "whitespace":
        at = draw(st.integers(0, n))
        return kind, [data[:at] + draw(st.sampled_from([b" ", b"\n", b"\t\r\n ", b"\x0b", b"\xc2\xa0"])) + data[at:]]
    lines = data.split(b"\n")
    if kind in ("duplicate_line", "drop_line", "swap_lines"):
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if kind == "duplicate_line":
            lines.insert(i, lines[i])
        elif kind == "drop_line":
            del lines[i]
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return kind, [b"\n".join(lines)]
    if kind == "splice":
        return kind, None  # built by the test from a second record
    if kind == "field":
        places = [p for p, _ in all_places(record) if p]
        path = draw(st.sampled_from(places))
        old = record
        for key in path:
            old = old[key]
        new = draw(st.sampled_from(replacement_values(old)))
        set_at(record, path, new)
        return kind, encodings(record, rng)
    if kind == "reorder":
        lists = [p for p, v in all_places(record) if isinstance(v, list) and len(v) >= 2]
        if not lists:
            return kind, [data]
        path = draw(st.sampled_from(lists))
        old = record
        for key in path:
            old = old[key]
        shuffled = list(old)
        rng.shuffle(shuffled)
        if path:
            set_at(record, path, shuffled)
        return kind, encodings(record, rng)
    # swap_steps
    steps = record["steps"]
    if len(steps) < 2:
        steps.append(copy.deepcopy(steps[-1]))
    else:
        i, j = rng.sample(range(len(steps)), 2)
        steps[i], steps[j] = steps[j], steps[i]
    return kind, encodings(record, rng)


@SMALL
@given(st.data())
def test_every_mutant_is_refused_or_the_same_record(data):
    scenario, original = data.draw(episodes())
    expected = ember.episode_metrics(scenario, original).to_dict()
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    kind, mutated = data.draw(mutants(original))
    if kind == "splice":
        other_scenario = scenario if data.draw(st.booleans()) else data.draw(scenarios())
        same = ember.scenario_hash(other_scenario) == ember.scenario_hash(scenario)
        other = run(
            other_scenario, data.draw(st.sampled_from(["stay", "random", "greedy"])), data.draw(st.integers(0, 5))
        )
        a = data.draw(st.integers(0, len(original)))
        b = data.draw(st.integers(0, len(other)))
        mutated = [original[:a] + other[b:], other[:b] + original[a:]]
        originals = [(original, expected)]
        if same:
            originals.append((other, ember.episode_metrics(scenario, other).to_dict()))
    else:
        originals = [(original, expected)]
    for mutant in mutated:
        check_mutant(scenario, mutant, originals, rng)


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(episodes(), st.data())
def test_several_mutations_at_once(episode, data):
    scenario, original = episode
    expected = ember.episode_metrics(scenario, original).to_dict()
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    mutant = original
    for _ in range(data.draw(st.integers(2, 4))):
        kind, mutated = data.draw(mutants(mutant if same_value(mutant, json.loads(original)) else original))
        if mutated:
            mutant = mutated[-1]
    check_mutant(scenario, mutant, [(original, expected)], rng)


@SMALL
@given(episodes(), st.data())
def test_fast_path_layouts_are_refused_or_the_same_record(episode, data):
    """Canonical step lines placed where the strict reader does not expect them.

    The canonical-line fast path takes a step from its line before the
    strict reader has placed that line in the record: a step line nested in
    another value, or lines moved between the record's parts, must not let
    the fast path's steps stand for what the reader sees.
    """
    scenario, original = episode
    expected = ember.episode_metrics(scenario, original).to_dict()
    lines = original.split(b"\n")
    head, steps, tail = lines[:3], lines[3:-3], lines[-3:]
    wrap = data.draw(
        st.sampled_from(
            [
                (b"{\n", b"\n}"),
                (b"[\n", b"\n]"),
                (b'{"steps":[\n', b"\n]}"),
                (b'{"initial_state":1,\n"steps":[\n', b"\n]}"),
            ]
        )
    )
    at = data.draw(st.integers(0, len(steps)))
    count = data.draw(st.integers(0, len(steps) - at))
    moved = steps[at : at + count]
    if moved and not moved[-1].endswith(b","):
        moved = moved[:-1] + [moved[-1] + b","]
    block = [wrap[0] + moved[0]] + moved[1:] if moved else [wrap[0]]
    block[-1] = block[-1].rstrip(b",") + wrap[1] + (b"," if at + count < len(steps) else b"")
    # The three first lines of the fast path's layout again, inside a value
    # opened on the first line: the step lines that follow are canonical,
    # but they are not the items of $.steps.
    header, initial = json.loads(original)["header"], json.loads(original)["initial_state"]
    opener, closer = data.draw(st.sampled_from([(b"{", b"}"), (b"[{", b"}]"), (b'{"x":{', b"}}")]))
    first = (
        b'{"header":' + canonical_json(header) + b',"initial_state":' + canonical_json(initial) + b',"steps":[' + opener
    )
    inner = [step.rstrip(b",") + b"," for step in steps[:count]]
    if inner:
        inner[-1] = inner[-1][:-1]
    rest = [step.rstrip(b",") + b"," for step in steps[count:]]
    if rest:
        rest[-1] = rest[-1][:-1]
    nested = (
        [first, b'"initial_state":' + canonical_json(initial) + b",", b'"steps":[']
        + inner
        + [b"]" + closer + (b"," if rest else b"")]
        + rest
    )
    variants = [
        b"\n".join(head + steps[:at] + block + steps[at + count :] + tail),
        b"\n".join(head[:2] + [head[2] + wrap[0].rstrip(b"\n")] + steps + tail),
        b"\n".join(nested + tail),
    ]
    for mutant in variants:
        check_mutant(scenario, mutant, [(original, expected)], random.Random(at))
