"""Issue #5: fail closed under hostile input.

No input (corrupted, truncated, adversarial or enormous) may crash the
engine with anything but ``MetricsInputError`` / ``ScenarioError``, hang it,
exhaust its memory, or get a result for a record the simulator could not
have written.

1. Mutation testing of records: every mutant of a valid record is refused
   with ``MetricsInputError`` or is the same JSON value and gives the same
   metrics, through ``episode_metrics`` and ``MetricsStream`` alike.
2. Resource limits: huge strings, numbers, whitespace, lines, lists and
   nesting are refused after reading a bounded amount, in bounded memory.
3. Scenario fuzzing: any scenario either validates or raises a
   ``ScenarioError`` whose message starts with a JSON path.
4. The command line: one ``ember:`` line on stderr, exit status 2, nothing on
   stdout; Ctrl-C exits with 130.
5. One named regression test per class of defect found.
"""

import contextlib
import copy
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json, canonical_json_reference, canonical_record
from ember.record import frontend
from ember.record.limits import largest_part_bytes, record_limits
from ember.scenario import compile_scenario

from batch_metrics import batch_metrics
from conftest import make_scenario, picture_scenario
from strict import assert_same_json, no_hang

# EMBER_HOSTILE_EXAMPLES=5000 for a longer search than the default run's.
EXAMPLES = int(os.environ.get("EMBER_HOSTILE_EXAMPLES", 120))
SMALL = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

# --- small random scenarios and episodes -----------------------------------------


@st.composite
def scenarios(draw):
    rows = draw(st.integers(1, 4))
    cols = draw(st.integers(2, 5))
    cells = [[r, c] for r in range(rows) for c in range(cols)]
    order = draw(st.permutations(range(len(cells))))
    n_people = draw(st.integers(1, min(3, len(cells) - 1)))
    n_exits = draw(st.integers(1, min(2, len(cells) - n_people)))
    n_walls = draw(st.integers(0, len(cells) - n_people - n_exits))
    n_walls = min(n_walls, 3)
    taken = [cells[k] for k in order]
    people, exits = taken[:n_people], taken[n_people : n_people + n_exits]
    walls = taken[n_people + n_exits : n_people + n_exits + n_walls]
    free = taken[n_people + n_exits + n_walls :]
    ignitions = draw(st.lists(st.sampled_from(free + exits), unique_by=tuple, max_size=2)) if free + exits else []
    return {
        "schema_version": "1.0",
        "scenario_id": draw(st.sampled_from(["s", "fuzz-1", "A.b_c"])),
        "grid": {"rows": rows, "cols": cols},
        "walls": walls,
        "exits": [{"exit_id": f"e{k}", "position": cell} for k, cell in enumerate(exits)],
        "people": [{"person_id": pid, "position": cell} for pid, cell in zip(("B", "a", "P3"), people)],
        "fire": {
            "ignitions": ignitions,
            "spread_probability": draw(st.sampled_from(["0/1", "1/2", "1/1", "2/3"])),
            "enter_fire": draw(st.sampled_from(["casualty", "block"])),
        },
        "termination": {"max_steps": draw(st.integers(1, 8))},
    }


def run(scenario, policy, seed):
    out = io.BytesIO()
    ember.run_episode(scenario, policy, seed, out)
    return out.getvalue()


@st.composite
def episodes(draw):
    scenario = draw(scenarios())
    policy = draw(st.sampled_from(["stay", "random", "greedy"]))
    seed = draw(st.one_of(st.integers(0, 50), st.just(2**64 - 1)))
    return scenario, run(scenario, policy, seed)


# --- running a record every way --------------------------------------------------

OK = "ok"


def pull(scenario, data):
    """("ok", metrics dict) or ("refused", message); anything else propagates."""
    try:
        return OK, ember.episode_metrics(scenario, data).to_dict()
    except ember.MetricsInputError as exc:
        return "refused", str(exc)


def push(scenario, data, rng):
    stream = ember.MetricsStream(scenario)
    try:
        start = 0
        while start < len(data):
            size = rng.choice((1, 2, 3, 7, 64, 500, 4096, 1 << 16))
            stream.feed(data[start : start + size])
            start += size
        return OK, stream.close().to_dict()
    except ember.MetricsInputError as exc:
        return "refused", str(exc)


def replays(scenario, data):
    try:
        ember.verify_replay(scenario, data)
    except ember.ReplayMismatchError:
        return False
    return True


def same_value(data, original):
    """Whether ``data`` is the JSON text of the same value (types exact: true is not 1)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return canonical_json(value) == canonical_json(original)


class NotJSON(Exception):
    pass


def _no_duplicates(pairs):
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise NotJSON("duplicate key")
    return dict(pairs)


def _refuse(token):
    raise NotJSON(f"not an integer: {token}")


def strict_json(data):
    """The value of the JSON text ``data`` under simulator.md §1, written apart from the reader."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise NotJSON("byte-order mark")
    try:
        value = json.loads(
            data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_float=_refuse, parse_constant=_refuse
        )
        canonical_json_reference(value)  # refuses lone surrogates
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise NotJSON(str(exc)) from None
    return value


def simulator_wrote(scenario, data):
    """The oracle: whether ``data`` is, as a JSON value, a record the simulator writes.

    Re-derived from the definitions (simulator.md §5-6), sharing nothing with
    the reader or the checks: the four keys, steps after header and
    initial_state, and a replay of the recorded actions from the recorded
    seed that gives the same canonical bytes.
    """
    try:
        value = strict_json(data)
    except NotJSON:
        return False
    if type(value) is not dict or sorted(value) != ["final_state", "header", "initial_state", "steps"]:
        return False
    order = list(json.loads(data, object_pairs_hook=lambda pairs: [key for key, _ in pairs]))
    if order.index("steps") < max(order.index("header"), order.index("initial_state")):
        return False
    header, steps = value["header"], value["steps"]
    if type(header) is not dict or type(header.get("seed")) is not int or not 0 <= header["seed"] < 2**64:
        return False
    if type(steps) is not list or not all(type(step) is dict for step in steps):
        return False
    sim = ember.Simulator(scenario, header["seed"])
    replayed = []
    for step in steps:
        try:
            replayed.append(sim.step(step.get("actions")))
        except ember.ActionError:
            return False
    if sim.final_state is None:
        return False
    want = canonical_record(sim.header, sim.initial_state, replayed, sim.final_state)
    return want == canonical_record(header, value["initial_state"], steps, value["final_state"])


def check_mutant(scenario, mutant, originals, rng):
    """The property of issue #5 for one mutant of valid records.

    A mutant is measured exactly when it is a record the simulator writes
    (``simulator_wrote``; for a mutant of one record that means the same
    JSON value, or another seed that gives the same record), by
    ``episode_metrics`` and ``MetricsStream`` alike, with the metrics of an
    independent batch computation, and those of the original when it is the
    same JSON value.  ``verify_replay`` agrees.  ``originals`` lists (record
    bytes, metrics dict) of the valid records the mutant was made from.
    Any exception but MetricsInputError fails the test.
    """
    pulled = pull(scenario, mutant)
    pushed = push(scenario, mutant, rng)
    assert pulled[0] == pushed[0], (pulled, pushed)
    valid = simulator_wrote(scenario, mutant)
    if pulled[0] == OK:
        assert valid, "a record the simulator did not write was measured"
        assert_same_json(pulled[1], pushed[1])
        assert_same_json(pulled[1], batch_metrics(scenario, mutant))
        for data, expected in originals:
            if same_value(mutant, json.loads(data)):
                assert_same_json(pulled[1], expected)
    else:
        assert not valid, f"a record the simulator writes was refused: {pulled[1]}"
    assert replays(scenario, mutant) == valid
    return pulled


# --- 1. mutations of valid records ----------------------------------------------

JSONISH = b'{}[],:"\\ \n0123456789-eE.tfnul\x00\xff\xc3\xa9abcz'


def all_places(value, path=(), depth=8):
    """Every (path, value) inside a parsed record (or scenario), ``depth`` levels down."""
    yield path, value
    if len(path) >= depth:
        return
    if type(value) is dict:
        for key, item in value.items():
            yield from all_places(item, path + (key,), depth)
    elif type(value) is list:
        for j, item in enumerate(value):
            yield from all_places(item, path + (j,), depth)


def set_at(root, path, new):
    target = root
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new


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


# --- 2. resource limits ----------------------------------------------------------

LIMITED = picture_scenario(["1A.", "...", "..B"], max_steps=3)
LIMITED_RECORD = run(LIMITED, "greedy", 0)
LINES = LIMITED_RECORD.split(b"\n")
HEAD = b"\n".join(LINES[:3]) + b"\n"  # header, initial_state and '"steps":[' lines
GIB = 1 << 30
CHUNK = 1 << 16


def part_limit(scenario):
    return record_limits(compile_scenario(scenario)).max_part_bytes


def endless(head, filler, counter, total=GIB):
    """``head``, then 64 KiB chunks of ``filler`` up to ``total`` bytes, counting the chunks taken."""
    yield head
    chunk = filler * (CHUNK // len(filler))
    for _ in range(total // len(chunk)):
        counter[0] += 1
        yield chunk


def refused_early(head, filler, match, scenario=LIMITED):
    """Feed ``head`` + 1 GiB of ``filler`` to episode_metrics: refused, reading and holding little.

    The bound on what is read: the fast path buffers one line up to
    MAX_LINE_BYTES, and the reader refuses a part past max_part_bytes.
    """
    counter = [0]
    tracemalloc.start()
    try:
        with no_hang(), pytest.raises(ember.MetricsInputError, match=match) as info:
            ember.episode_metrics(scenario, endless(head, filler, counter))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    most = (frontend.MAX_LINE_BYTES + part_limit(scenario)) // CHUNK + 2
    assert counter[0] <= most, f"read {counter[0]} chunks of 64 KiB (at most {most} expected)"
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB of Python memory for a 1 GiB input"
    return str(info.value)


def test_the_part_limit_follows_the_scenario():
    # 2 people on a 3 x 3 grid: the 1 MiB floor, against the reader's 64 MiB default.
    assert part_limit(LIMITED) == 1 << 20
    big = make_scenario(4096, 4096, people={"a": (0, 0)}, exits={"x": (4095, 4095)})
    # A step of this scenario may list all 16,777,214 open cells as burning (and many as ignitions):
    # the limit is that size, plus at most 64 MiB of room for whitespace.
    largest = largest_part_bytes(compile_scenario(big))
    assert largest > 2 * 16_777_214 * len("[4096,4096],")
    assert part_limit(big) == largest + (64 << 20)
    hall = ember.load_scenario("builtin:hall")
    assert 1 << 20 < part_limit(hall) <= 64 << 20


def test_a_huge_string_is_refused_without_holding_it():
    message = refused_early(b'{"header":{"scenario_id":"', b"a", "Limit exceeded")
    assert message.startswith("$.header.scenario_id: Limit exceeded: more than max_part_bytes=1048576 bytes")
    refused_early(HEAD + b'{"actions":{"A":"', b"\xc3\xa9", r"^\$\.steps\[0\]\.actions\.A: Limit exceeded")
    refused_early(HEAD + b'{"actions":{"', b"k", r"^\$\.steps\[0\]\.actions: Limit exceeded")  # a key


def test_a_huge_integer_is_refused_at_its_41st_digit():
    refused_early(
        b'{"header":{"seed":', b"7", r"^\$\.header\.seed: Limit exceeded: a number has more than max_integer_digits=40"
    )
    refused_early(HEAD + b'{"actions":{},"step":', b"7", r"^\$\.steps\[0\]\.step: Limit exceeded: a number")
    for record in (
        LIMITED_RECORD.replace(b'"seed":0', b'"seed":' + b"9" * 10**6),
        HEAD + b'{"actions":{},"step":' + b"7" * 10**6 + b"}\n",
        HEAD + b'{"actions":{},"step":1.' + b"7" * 10**6 + b"}\n",
    ):
        with no_hang(), pytest.raises(ember.MetricsInputError, match="Limit exceeded"):
            ember.episode_metrics(LIMITED, record)


def test_a_gigabyte_of_whitespace_between_steps_is_refused():
    after_one_step = HEAD + LINES[3] + b"\n"
    for filler in (b" ", b"\n", b"\r\n\t "):
        refused_early(after_one_step, filler, r"^\$\.steps\[1\]: Limit exceeded: more than max_part_bytes")
    refused_early(b"", b" ", r"^\$: Limit exceeded")  # before the record


def test_the_fast_path_never_buffers_more_than_one_capped_line():
    stream = ember.MetricsStream(LIMITED)
    stream.feed(HEAD)
    lines = stream._input.front_end.chosen  # AnyLayout chose CanonicalLines from the first bytes
    assert isinstance(lines, frontend.CanonicalLines)
    most = frontend.MAX_LINE_BYTES + CHUNK
    with pytest.raises(ember.MetricsInputError, match="Limit exceeded"):
        stream.feed(b'{"actions":{"A":"')
        for _ in range(GIB // CHUNK):
            stream.feed(b"a" * CHUNK)
            assert lines.partial_size <= most
    assert lines.partial_size == 0 and not lines.active
    # Long lines that do end: each is compared once, then the strict reader takes over.
    long = b"a" * (frontend.MAX_LINE_BYTES - 100)
    refused_early(b'{"header":{"x":"' + long + b'"},\n', b" ", r"^\$\.header\.x: Limit exceeded")
    refused_early(
        HEAD + b'{"actions":{"A":"stay"},"x":"' + long + b'"},\n', b" ", r"^\$\.steps\[0\]\.x: Limit exceeded"
    )


def test_a_step_with_a_million_movements_is_refused_in_linear_time():
    movement = b'{"origin":[0,1],"outcome":"stayed","person_id":"A","target":null},'
    refused_early(
        HEAD + b'{"actions":{"A":"stay","B":"stay"},"movements":[',
        movement,
        r"^\$\.steps\[0\]\.movements\[\d+\]\S*: Limit exceeded",
    )
    refused_early(HEAD + b'{"actions":{"A":"stay","B":"stay"},"movements":[', b"{},", r"Limit exceeded")
    # Within the part limit of a scenario of 2,000 people: the checks refuse it, in linear time.
    people = {f"p{i:05d}": (i // 50, i % 50) for i in range(2000)}
    crowd = make_scenario(41, 50, people=people, exits={"x": (40, 49)}, max_steps=2)
    record = run(crowd, "stay", 0).split(b"\n")
    step = json.loads(record[3].rstrip(b","))
    step["movements"] = [
        {"origin": [0, 0], "outcome": "stayed", "person_id": f"q{k:07d}", "target": None} for k in range(60_000)
    ]
    data = b"\n".join(record[:3]) + b"\n" + canonical_json(step) + b"\n"
    assert len(data) < part_limit(crowd)
    with (
        no_hang(),
        pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]\.movements\[0\]\.person_id: expected 'p00000'"),
    ):
        ember.episode_metrics(crowd, data)


def test_deep_nesting_is_refused():
    deep = b"[" * 10**6
    refused_early(
        HEAD + b'{"actions":{"A":', b"[", r"Limit exceeded: arrays and objects are nested more than max_depth=32"
    )
    for record in (
        b'{"header":' + deep,
        HEAD + b'{"actions":{"A":' + deep + b"\n",
        HEAD + b'{"actions":{"A":' + deep + b"]" * 10**6 + b"}}\n",
        HEAD + b'{"actions":{"A":' + b'{"a":' * 10**5 + b"}" * 10**5 + b"}\n",
    ):
        with pytest.raises(ember.MetricsInputError, match="max_depth=32"):
            ember.episode_metrics(LIMITED, record)
        with pytest.raises(ember.ReplayMismatchError, match="max_depth=32"):
            ember.verify_replay(LIMITED, record)


def test_many_steps_after_termination_are_refused_at_the_first():
    steps = LINES[3:-3]
    last = steps[-1]
    head = HEAD + b"\n".join(steps) + b",\n"
    counter = [0]
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[3\]: the episode terminated at step 3"):
        ember.episode_metrics(LIMITED, endless(head, last + b",\n", counter))
    assert counter[0] <= 1


def test_valid_records_pass_the_limits_in_any_layout():
    room = ember.load_scenario("builtin:small-room")
    data = run(room, "random", 3)
    expected = ember.episode_metrics(room, data).to_dict()
    record = json.loads(data)
    for text in (json.dumps(record, indent=8), json.dumps(record, indent="\t", sort_keys=True, ensure_ascii=True)):
        assert_same_json(ember.episode_metrics(room, text.encode()).to_dict(), expected)


# --- 3. scenario fuzzing ------------------------------------------------------------


class Custom:
    pass


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


class BadEq:
    def __eq__(self, other):
        raise RuntimeError("no eq")

    __hash__ = object.__hash__


class Str(str):
    pass


def _deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth):
    value = {}
    for _ in range(depth):
        value = {"grid": value}
    return value


def _self_reference():
    value = []
    value.append(value)
    return value


WEIRD = {
    "none": lambda: None,
    "true": lambda: True,
    "false": lambda: False,
    "zero": lambda: 0,
    "minus": lambda: -1,
    "2^64": lambda: 2**64,
    "2^31": lambda: 2**31,
    "2^32+1": lambda: 2**32 + 1,
    "huge": lambda: 10**5000,
    "-huge": lambda: -(10**5000),
    "float": lambda: 1.5,
    "4.0": lambda: 4.0,
    "nan": lambda: float("nan"),
    "inf": lambda: float("inf"),
    "str": lambda: "x",
    "empty": lambda: "",
    "long": lambda: "x" * 10**6,
    "1.0": lambda: "1.0",
    "p-digits": lambda: "1" + "0" * 5000 + "/1",
    "p-den": lambda: "1/" + "9" * 5000,
    "p-big": lambda: "1/4294967297",
    "block": lambda: "block",
    "list": lambda: [],
    "list3": lambda: [1, 2, 3],
    "cell": lambda: [0, 0],
    "cell-out": lambda: [99, 99],
    "cell-bool": lambda: [True, False],
    "cell-huge": lambda: [10**5000, 0],
    "cell-neg": lambda: [-(2**70), 0],
    "dict": lambda: {},
    "tuple": lambda: (0, 0),
    "set": lambda: {1, 2},
    "frozenset": lambda: frozenset(),
    "bytes": lambda: b"x",
    "complex": lambda: 1j,
    "decimal": lambda: __import__("decimal").Decimal("1"),
    "fraction": lambda: __import__("fractions").Fraction(1, 2),
    "custom": Custom,
    "bad-repr": BadRepr,
    "bad-eq": BadEq,
    "str-sub": lambda: Str("1.0"),
    "deep-list": lambda: _deep_list(100_000),
    "deep-dict": lambda: _deep_dict(100_000),
    "self-ref": _self_reference,
    "class": lambda: int,
    "function": lambda: len,
}
KEYS = {
    "extra": lambda: "extra",
    "one": lambda: 1,
    "none": lambda: None,
    "tuple": lambda: (1, 2),
    "huge": lambda: 10**5000,
    "custom": Custom,
    "bad-eq": BadEq,
    "bad-repr": BadRepr,
    "long": lambda: "k" * 10**5,
}


def valid_scenario_or_path_error(source, again=None):
    """load_scenario either validates ``source`` or raises ScenarioError with a ``$`` path.

    ``again()`` gives the source afresh (a file is read once) for scenario_hash.
    """
    try:
        scenario = ember.load_scenario(source)
    except ember.ScenarioError as exc:
        assert str(exc).startswith("$"), str(exc)
        assert len(str(exc)) < 10_000
        with pytest.raises(ember.ScenarioError):
            ember.scenario_hash(again() if again else source)
        return None, exc
    assert ember.scenario_hash(scenario) == ember.scenario_hash(again() if again else source)
    return scenario, None


def refused_with_cause(make, error):
    """episode_metrics (and MetricsStream) refuse an invalid scenario with the ScenarioError as cause.

    ``make()`` gives the scenario source (afresh: a file is read once).
    """
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(make(), LIMITED_RECORD)
    assert isinstance(info.value.__cause__, ember.ScenarioError)
    assert str(info.value.__cause__) == str(error)
    with pytest.raises(ember.MetricsInputError) as info:
        ember.MetricsStream(make())
    assert isinstance(info.value.__cause__, ember.ScenarioError)


def structural_edit(scenario, data):
    kind = data.draw(st.sampled_from(["replace", "delete", "add_key", "wrap", "source"]))
    if kind == "source":
        return WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    places = [path for path, _ in all_places(scenario, depth=4)]
    path = data.draw(st.sampled_from(places))
    parent = scenario
    for key in path[:-1]:
        parent = parent[key]
    target = parent[path[-1]] if path else scenario
    if kind == "replace" and path:
        parent[path[-1]] = WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    elif kind == "delete" and path:
        del parent[path[-1]]
    elif kind == "add_key" and isinstance(target, dict):
        target[KEYS[data.draw(st.sampled_from(sorted(KEYS)))]()] = WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    elif kind == "wrap" and path:
        parent[path[-1]] = data.draw(st.sampled_from([lambda v: [v], lambda v: {"x": v}, lambda v: (v,)]))(target)
    return scenario


@SMALL
@given(scenarios(), st.data())
def test_scenario_structural_edits_validate_or_name_a_path(scenario, data):
    for _ in range(data.draw(st.integers(1, 3))):
        scenario = structural_edit(scenario, data)
        if not isinstance(scenario, dict):
            break
    validated, error = valid_scenario_or_path_error(scenario)
    if error is not None:
        refused_with_cause(lambda: scenario, error)
        with pytest.raises(ember.ScenarioError):
            ember.Simulator(scenario, 0)
    else:
        # Valid, yet maybe another scenario: measured or refused, never anything else.
        with contextlib.suppress(ember.MetricsInputError):
            ember.episode_metrics(scenario, LIMITED_RECORD)


@SMALL
@given(scenarios(), st.data())
def test_scenario_text_mutations_validate_or_name_a_path(scenario, data):
    text = canonical_json(scenario)
    if data.draw(st.booleans()):
        text = json.dumps(scenario, indent=2).encode()
    kind = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate", "duplicate", "nest", "number"]))
    at = data.draw(st.integers(0, len(text)))
    if kind == "flip" and at < len(text):
        text = text[:at] + bytes([text[at] ^ data.draw(st.integers(1, 255))]) + text[at + 1 :]
    elif kind == "delete":
        text = text[:at] + text[at + data.draw(st.integers(1, 10)) :]
    elif kind == "insert":
        text = text[:at] + bytes(data.draw(st.lists(st.sampled_from(JSONISH), min_size=1, max_size=6))) + text[at:]
    elif kind == "truncate":
        text = text[:at]
    elif kind == "duplicate":
        key = data.draw(st.sampled_from([b'"grid":{"rows":1,"cols":1},', b'"walls":[],', b'"scenario_id":"s",']))
        text = b"{" + key + text[1:]
    elif kind == "nest":
        depth = data.draw(st.sampled_from([10, 1000, 100_000]))
        text = text[:at] + b"[" * depth + b"0" + b"]" * depth + text[at:]
    elif kind == "number":
        text = (
            text[:at]
            + data.draw(st.sampled_from([b"1e999", b"NaN", b"-Infinity", b"9" * 5000, b"1.0", b"-0", b"01"]))
            + text[at:]
        )
    for make in (lambda: text, lambda: text.decode("utf-8", "surrogateescape"), lambda: io.BytesIO(text)):
        scenario_or_none, error = valid_scenario_or_path_error(make(), make)
        if error is not None:
            refused_with_cause(make, error)


def test_scenario_sources_of_every_kind_fail_with_a_path(tmp_path):
    base = copy.deepcopy(LIMITED)
    cases = [WEIRD[name]() for name in sorted(WEIRD)] + [
        "abc\x00def",
        str(tmp_path),
        str(tmp_path / "missing" / "x.json"),
        "x" * 100_000,
        b"\xef\xbb\xbf{}",
        b"\xff\xfe",
        "\ud800",
        tmp_path,
        io.StringIO("{"),
        io.BytesIO(b""),
    ]
    closed = io.BytesIO(b"{}")
    closed.close()
    cases.append(closed)
    for source in cases:
        scenario, error = valid_scenario_or_path_error(
            source, lambda source=source: source if not hasattr(source, "read") else io.BytesIO(b"")
        )
        assert scenario is None
    for _name, make in sorted(KEYS.items()):
        source = copy.deepcopy(base)
        source[make()] = 1
        assert valid_scenario_or_path_error(source)[1] is not None


# --- 4. the command line -------------------------------------------------------------------


def ember_cli(*args, stdin=None, input=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        stdin=stdin,
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )


def assert_refused(result):
    """Exactly one line on stderr starting with 'ember:', exit status 2, nothing on stdout."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, (result.returncode, err)
    assert result.stdout == b""
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("ember: "), err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    scenario = folder / "scenario.json"
    scenario.write_text(json.dumps(LIMITED))
    (folder / "empty.record").write_bytes(b"")
    (folder / "garbage.record").write_bytes(bytes(random.Random(5).randrange(256) for _ in range(5000)))
    (folder / "truncated.record").write_bytes(LIMITED_RECORD[: len(LIMITED_RECORD) // 2])
    (folder / "a-directory").mkdir()
    return folder, scenario


@pytest.mark.parametrize("command", ["metrics", "replay"])
@pytest.mark.parametrize(
    "record", ["a-directory", "empty.record", "garbage.record", "truncated.record", "missing/x.record", "unreadable"]
)
def test_cli_refuses_bad_records(cli_files, command, record):
    folder, scenario = cli_files
    path = folder / record
    if record == "unreadable":
        path = folder / f"unreadable-{command}.record"
        if os.geteuid() == 0:
            # root reads a chmod 000 file; a symlink loop is unreadable to everyone.
            path.symlink_to(path.name)
        else:
            path.write_bytes(LIMITED_RECORD)
            path.chmod(0)
    assert_refused(ember_cli(command, scenario, path))


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_cli_refuses_a_pipe_that_closes_early(cli_files, command):
    folder, scenario = cli_files
    half = LIMITED_RECORD[: len(LIMITED_RECORD) // 2]
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdout.buffer.write({half!r})"], stdout=subprocess.PIPE
    )
    try:
        result = ember_cli(command, scenario, "-", stdin=writer.stdout)
    finally:
        writer.stdout.close()
        writer.wait(timeout=10)
    assert_refused(result)
    assert "truncated" in result.stderr.decode()


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_cli_exits_cleanly_on_ctrl_c(cli_files, command):
    folder, scenario = cli_files
    process = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", command, str(scenario), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        process.stdin.write(HEAD)  # a record that goes on and never ends
        process.stdin.flush()
        # Wait until it blocks reading the pipe (or 3 s, where /proc hides
        # wchan): a SIGINT while Python is still importing is another story.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{process.pid}/wchan") as handle:
                    if "pipe" in handle.read():
                        break
            except OSError:
                pass
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert out == b""
    assert err.count(b"\n") == 1 and err.startswith(b"ember: ") and b"Traceback" not in err, err


def test_cli_measures_a_good_record(cli_files):
    folder, scenario = cli_files
    (folder / "good.record").write_bytes(LIMITED_RECORD)
    result = ember_cli("metrics", scenario, folder / "good.record")
    assert result.returncode == 0, result.stderr
    assert_same_json(json.loads(result.stdout), ember.episode_metrics(LIMITED, LIMITED_RECORD).to_dict())


# --- 5. regressions: one per class of defect found --------------------------------------


def forged_nested_step_line(record):
    """The record's first step line moved inside a made-up object at $.steps[0]."""
    value = json.loads(record)
    h, s0, steps, f = value["header"], value["initial_state"], value["steps"], value["final_state"]
    return (
        b'{"header":'
        + canonical_json(h)
        + b',"initial_state":'
        + canonical_json(s0)
        + b',"steps":[{\n'
        + b'"initial_state":1,\n"steps":[\n'
        + canonical_json(steps[0])
        + b"\n]}"
        + b"".join(b",\n" + canonical_json(step) for step in steps[1:])
        + b'\n],\n"final_state":'
        + canonical_json(f)
        + b"}\n"
    )


def test_regression_fast_path_step_line_nested_inside_another_value():
    # The canonical-line fast path took step 1 from a line the strict reader
    # placed at $.steps[0].steps[0]; the engine then skipped $.steps[0] (a
    # made-up object) as "the placeholder of a step already taken", and
    # measured a record the simulator never wrote.
    forged = forged_nested_step_line(LIMITED_RECORD)
    assert not simulator_wrote(LIMITED, forged)
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]"):
        ember.episode_metrics(LIMITED, forged)
    stream = ember.MetricsStream(LIMITED)
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]"):
        for k in range(0, len(forged), 100):
            stream.feed(forged[k : k + 100])
        stream.close()


def test_regression_fast_path_deep_actions_raised_recursion_error():
    # The fast path parsed a step line's actions with json.loads, which
    # raises RecursionError (not a ValueError) on deep nesting.
    line = b'{"actions":{"A":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    with pytest.raises(ember.MetricsInputError, match="max_depth=32"):
        ember.episode_metrics(LIMITED, HEAD + line)


def test_regression_coverage_was_quadratic_in_extra_actions():
    # Coverage rebuilt set(active) for every action it looked at: 200,000
    # extra actions in a step of 4,000 people took 20 s (and a million of
    # 10,000 people, hours); now about a second.
    people = {f"p{i:05d}": (i // 50, i % 50) for i in range(4000)}
    crowd = make_scenario(81, 50, people=people, exits={"x": (80, 49)}, max_steps=2)
    record = run(crowd, "stay", 0).split(b"\n")
    step = json.loads(record[3].rstrip(b","))
    step["actions"].update((f"q{k:07d}", "stay") for k in range(200_000))
    data = b"\n".join(record[:3]) + b"\n" + canonical_json(step) + b"\n"
    with (
        no_hang(),
        pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]\.actions\.q0000000: expected actions only"),
    ):
        ember.episode_metrics(crowd, data)


def test_regression_byte_guard_was_quadratic_in_digit_strings():
    # For each run of more than 40 digits the reader's byte guard counted the
    # quotes from the start of the 64 KiB piece, to tell a string from a
    # number: a part of many such strings took 30 s to refuse, not 1.5 s.
    from ember.record.guard import ByteGuard

    piece = (b'"' + b"0" * 41 + b'",') * (CHUNK // 44)
    guard = ByteGuard(40)
    guard.scan(b"[")
    with no_hang():
        for _ in range(200):
            safe, problem = guard.scan(piece)
            assert problem is None and safe == piece
    with pytest.raises(ember.MetricsInputError, match="max_integer_digits"):
        ember.episode_metrics(LIMITED, HEAD + b'{"actions":["' + b"1" * 50 + b'",' + b"1" * 41)


def test_regression_part_memory_was_not_proportional_to_the_scenario():
    # Every record was read with the reader's 64 MiB part limit: 64 MiB of
    # '[],' in one step built 22 million lists (1.5 GB, 11 s) before the
    # refusal, whatever the scenario.  The limit now follows the scenario.
    message = refused_early(HEAD + b'{"actions":[', b"[],", r"^\$\.steps\[0\]\.actions\[\d+\]\S*: Limit exceeded")
    assert "max_part_bytes=1048576" in message
    with pytest.raises(ember.ReplayMismatchError, match="max_part_bytes=1048576"):
        ember.verify_replay(LIMITED, endless(HEAD + b'{"actions":[', b"[],", [0]))


def test_regression_scenario_huge_integers_raised_value_error():
    # Messages formatted the integer: str() of more than 4,300 digits raises
    # ValueError; and int() of a long "N/D" did the same.
    for path, value in (
        (("grid", "rows"), 10**5000),
        (("walls",), [[10**5000, 0]]),
        (("termination", "max_steps"), -(10**5000)),
        (("fire", "spread_probability"), "1" + "0" * 5000 + "/1"),
        (("fire", "spread_probability"), "1/" + "9" * 5000),
    ):
        source = copy.deepcopy(LIMITED)
        set_at(source, path, value)
        with pytest.raises(ember.ScenarioError, match=r"^\$\." + path[0]):
            ember.load_scenario(source)
        text = json.dumps(source).encode() if type(value) is str else None
        if text:
            with pytest.raises(ember.ScenarioError, match=r"^\$\.fire\.spread_probability"):
                ember.load_scenario(text)
    source = copy.deepcopy(LIMITED)
    source[10**5000] = 1
    with pytest.raises(ember.ScenarioError, match=r"^\$\[an integer of about 5001 digits\]: unexpected key"):
        ember.load_scenario(source)


def test_regression_scenario_messages_used_foreign_repr():
    # Messages used repr() of whatever a dict source held: a raising
    # __repr__ escaped, a deeply nested list raised RecursionError, and a
    # foreign key's __eq__ was called against every expected key.
    for value in (BadRepr(), _deep_list(100_000), _deep_dict(100_000), _self_reference(), [BadRepr(), 0]):
        for path in (
            ("scenario_id",),
            ("walls",),
            ("walls", 0),
            ("grid", "rows"),
            ("fire", "enter_fire"),
            ("schema_version",),
        ):
            source = copy.deepcopy(LIMITED)
            if path == ("walls", 0):
                source["walls"] = [value]
            else:
                set_at(source, path, value)
            with pytest.raises(ember.ScenarioError, match=r"^\$\."):
                ember.load_scenario(source)
    for key in (BadEq(), BadRepr()):
        source = copy.deepcopy(LIMITED)
        source[key] = 1
        with pytest.raises(ember.ScenarioError, match=r"^\$\[a Bad\w+ object\]: unexpected key"):
            ember.load_scenario(source)


def test_regression_scenario_paths_were_quadratic_in_nesting():
    # Parsing built every value's path string eagerly and every open frame
    # held its own: 500 nested objects with 4,000-character keys (2 MB of
    # JSON) took 500 MB and seconds before the first check.
    depth, key = 500, 4000
    text = "".join('{"' + "k" * (key - 1) + str(d % 10) + '":' for d in range(depth)) + "0" + "}" * depth
    tracemalloc.start()
    try:
        with no_hang(), pytest.raises(ember.ScenarioError, match=r"^\$: missing key"):
            ember.load_scenario(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20
    duplicate = '{"a":' * 50 + '{"k":1,"k":2}' + "}" * 50
    with pytest.raises(ember.ScenarioError, match=r"^\$" + r"\.a" * 50 + r"\.k: duplicate key 'k'"):
        ember.load_scenario(duplicate)


def test_regression_nul_in_a_path_raised_value_error():
    # open() raises ValueError, not OSError, for a path with a NUL character.
    with pytest.raises(ember.MetricsInputError, match=r"^\$: cannot read the record file"):
        ember.episode_metrics(LIMITED, "record\x00.json")
    with pytest.raises(ember.ScenarioError, match=r"^\$: cannot read the scenario file"):
        ember.load_scenario("scenario\x00.json")
    with pytest.raises(ember.ScenarioError, match=r"^\$: cannot read the scenario file"):
        ember.load_scenario("\ud800.json")  # not encodable as a file name


class Reads:
    """A file-like object whose read gives ``result`` (or raises it)."""

    def __init__(self, result):
        self.result = result

    def read(self, size=-1):
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


def test_regression_closed_or_odd_streams_raised_other_errors():
    # Reading a closed file raises ValueError; a read() that gives neither
    # bytes nor str went on to the parser.
    closed = io.BytesIO(LIMITED_RECORD)
    closed.close()
    with pytest.raises(
        ember.MetricsInputError, match=r"^\$: reading the record failed: I/O operation on closed file\.$"
    ):
        ember.episode_metrics(LIMITED, closed)
    closed = io.BytesIO(canonical_json(LIMITED))
    closed.close()
    with pytest.raises(ember.ScenarioError, match=r"^\$: reading the scenario file failed"):
        ember.load_scenario(closed)
    for odd in ([1, 2], 5, None, OSError(5, "Input/output error"), ValueError("odd")):
        with pytest.raises(ember.MetricsInputError, match=r"^\$: reading the record"):
            ember.episode_metrics(LIMITED, Reads(odd))


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


def test_regression_strided_memoryview_raised_type_error():
    # memoryview.cast("B") refuses a view that is not C-contiguous.
    doubled = bytes(b for byte in LIMITED_RECORD for b in (byte, 0))
    view = memoryview(doubled)[::2]
    assert_same_json(
        ember.episode_metrics(LIMITED, view).to_dict(), ember.episode_metrics(LIMITED, LIMITED_RECORD).to_dict()
    )


def test_regression_scenario_read_was_unbounded(monkeypatch):
    # A scenario file was read whole: /dev/zero (or any endless stream) held
    # the process until memory ran out.
    import ember.scenario

    monkeypatch.setattr(ember.scenario, "MAX_SCENARIO_BYTES", 1 << 20, raising=False)

    class Endless:
        def read(self, size=-1):
            assert size >= 0, "read everything of an endless stream"
            return b" " * size

    with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer than 1,048,576 bytes"):
        ember.load_scenario(Endless())
    if os.path.exists("/dev/zero"):
        with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer"):
            ember.load_scenario("/dev/zero")
    with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer"):
        ember.load_scenario(b" " * ((1 << 20) + 1))
