"""Hostile input: random small scenarios and episodes, a record run every way, the oracle
of what the simulator writes, places in a JSON value, a small record to cut and endless streams."""

import io
import json
import os
import tracemalloc

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json, canonical_json_reference, canonical_record
from ember.record.limits import record_limits
from ember.scenario import compile_scenario

from helpers.batch_metrics import batch_metrics
from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json, no_hang

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
    """The hostile-input property (measured only if the simulator wrote it, then exactly) for one mutant.

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

    The bound on what is read: the fast path buffers one line up to the
    part limit, and the reader refuses a part past it.
    """
    counter = [0]
    tracemalloc.start()
    try:
        with no_hang(), pytest.raises(ember.MetricsInputError, match=match) as info:
            ember.episode_metrics(scenario, endless(head, filler, counter))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    most = 2 * part_limit(scenario) // CHUNK + 2
    assert counter[0] <= most, f"read {counter[0]} chunks of 64 KiB (at most {most} expected)"
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB of Python memory for a 1 GiB input"
    return str(info.value)


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
