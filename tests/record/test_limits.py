"""Limits never refuse a record the simulator writes for a valid scenario.

Before, the part limit was capped at 64 MiB: a scenario of 250,000 people
with 64-character IDs (valid) ran, but ``metrics`` and ``replay`` refused
its record.  Each bound now comes from the scenario's largest valid part
(``largest_part_bytes``); tests check that bound against parts the
simulator really writes, and that it is tight (an upper bound a worst-case
step reaches), so what no valid record can be is still refused.
"""

import dataclasses
import io
import json

import pytest

import ember
from ember.canonical import canonical_json
from ember.record import frontend, limits
from ember.record.limits import DEFAULT_LIMITS, largest_part_bytes, record_limits
from ember.record.pipeline import RecordInput, read_into
from ember.scenario import compile_scenario

from helpers.hostile_input import (
    CHUNK,
    GIB,
    HEAD,
    LIMITED,
    LIMITED_RECORD,
    LINES,
    endless,
    part_limit,
    refused_early,
    run,
)
from helpers.scenarios import make_scenario
from helpers.strict import assert_same_json, no_hang

OLD_CAP = 64 << 20  # the part limit every scenario had at most before


def long_id(prefix, i):
    return f"{prefix}{i:0{63}d}"  # 64 characters, the longest valid ID


def crowd(rows, cols, count, *, p="1/1", max_steps=50, ignitions=((0, 0),)):
    """A valid scenario: ``count`` people with 64-character IDs, two exits with 64-character IDs, fire."""
    taken = set(ignitions) | {(rows - 1, cols - 1), (rows - 1, 0)}
    cells = ((r, c) for r in range(rows) for c in range(cols) if (r, c) not in taken)
    people = [{"person_id": long_id("p", i), "position": list(next(cells))} for i in range(count)]
    return {
        "schema_version": "1.0",
        "scenario_id": "c" * 64,
        "grid": {"rows": rows, "cols": cols},
        "walls": [],
        "exits": [
            {"exit_id": "E" * 64, "position": [rows - 1, cols - 1]},
            {"exit_id": "F" * 63, "position": [rows - 1, 0]},
        ],
        "people": people,
        "fire": {"ignitions": [list(c) for c in ignitions], "spread_probability": p, "enter_fire": "casualty"},
        "termination": {"max_steps": max_steps},
    }


def worst_step(compiled):
    """A step as large as any valid step of ``compiled`` can be (not itself valid): every entry at its widest."""
    rows, cols = compiled.grid.rows, compiled.grid.cols
    cell = [max((-1, rows), key=lambda v: len(str(v))), max((-1, cols), key=lambda v: len(str(v)))]
    exit_id = max(compiled.exit_ids, key=len)
    ids = compiled.person_ids
    t = compiled.max_steps
    cells = [cell] * compiled.grid.open.count(1)
    return {
        "actions": dict.fromkeys(ids, "north"),
        "casualties": [],
        "evacuations": [{"exit_id": exit_id, "person_id": pid} for pid in ids],
        "ignitions": cells,
        "movements": [{"origin": cell, "outcome": "blocked_boundary", "person_id": pid, "target": cell} for pid in ids],
        "snapshot": {
            "burning": cells,
            "people": [{"person_id": pid, "position": cell, "status": "evacuated"} for pid in ids],
            "step": t,
            "terminated": False,
            "termination_reason": "all_resolved",
            "trapped": [],
        },
        "step": t,
    }


class PartCounter:
    """A reader sink that only counts the parts it receives."""

    def __init__(self):
        self.parts = 0

    def header(self, value):
        self.parts += 1

    initial_state = final_state = header

    def step(self, index, value):
        self.parts += 1

    def end(self):
        pass


@pytest.mark.parametrize(
    "rows, cols, count, p, seed",
    [
        (12, 13, 100, "1/1", 0),  # the fire takes every cell: ignitions and burning at their largest
        (31, 40, 300, "1/3", 4),
        (101, 9, 300, "0/1", 1),  # three-digit rows, targets out of bounds at -1 and 101
    ],
)
def test_largest_part_bound_holds_for_records_the_simulator_writes(rows, cols, count, p, seed):
    scenario = crowd(rows, cols, count, p=p)
    compiled = compile_scenario(scenario)
    bound = limits.largest_part_bytes(compiled)
    for policy in ("random", "greedy"):
        out = io.BytesIO()
        ember.run_episode(scenario, policy, seed, out)
        data = out.getvalue()
        lines = data.split(b"\n")
        assert max(len(line) for line in lines) <= bound
        # Read back under the canonical bound itself (no slack, no floor): every part fits.
        canonical_bound = dataclasses.replace(DEFAULT_LIMITS, max_part_bytes=bound)
        sink = PartCounter()
        read_into(data, RecordInput(sink, canonical_bound))  # the strict reader alone: it is the one that counts
        assert sink.parts == len(lines) - 3  # all but the lines '"steps":[', '],' and the empty last one


# The bound counts a comma after every entry, the last of each of the six lists too.
LIST_COMMAS = 6


def test_largest_part_bound_is_reached_by_a_worst_case_step():
    # Tight: the bound is the canonical size of a step with every entry at its widest (give or take
    # the six commas), so a part larger than any valid one is still refused, with the slack below.
    for scenario in (crowd(12, 13, 100), crowd(101, 9, 300), crowd(3, 4, 2)):
        compiled = compile_scenario(scenario)
        worst = len(canonical_json(worst_step(compiled)))
        assert worst <= limits.largest_part_bytes(compiled) <= worst + LIST_COMMAS, scenario["grid"]


def test_part_limit_is_the_bound_with_bounded_slack():
    for scenario in (crowd(12, 13, 100), crowd(200, 200, 5000, p="0/1")):
        compiled = compile_scenario(scenario)
        largest = limits.largest_part_bytes(compiled)
        expected = max(1 << 20, min(16 * largest, largest + (64 << 20)))
        assert record_limits(compiled).max_part_bytes == expected


QUARTER_MILLION = 250_000


@pytest.fixture(scope="module")
def quarter_million():
    """A crowd far past any shipped floor: 250,000 people with 64-character IDs on a 510 x 510 grid."""
    rows = cols = 510
    scenario = crowd(rows, cols, QUARTER_MILLION, p="1/4", max_steps=1000)
    return compile_scenario(scenario)


def test_a_quarter_million_people_with_64_character_ids_is_not_refused(quarter_million):
    worst = len(canonical_json(worst_step(quarter_million)))
    assert worst > OLD_CAP  # the old cap refused such a record
    assert record_limits(quarter_million).max_part_bytes >= worst
    largest = limits.largest_part_bytes(quarter_million)
    assert worst <= largest <= worst + LIST_COMMAS
    # 64 MiB of room for whitespace beyond the largest valid part, no more.
    assert record_limits(quarter_million).max_part_bytes == largest + (64 << 20)


def test_the_widest_words_are_the_longest_of_their_vocabularies():
    from ember.checks.shape import ACTIONS, CAUSES, OUTCOMES, REASONS, STATUSES

    for word, vocabulary in (
        (limits.WIDEST_ACTION, ACTIONS),
        (limits.WIDEST_OUTCOME, OUTCOMES),
        (limits.WIDEST_STATUS, STATUSES),
        (limits.WIDEST_CAUSE, CAUSES),
        (limits.WIDEST_REASON, [r for r in REASONS if r is not None]),
    ):
        assert word in vocabulary and len(word) == max(map(len, vocabulary))


# --- resource limits ----------------------------------------------------------------


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
    most = lines.max_line_bytes + CHUNK
    assert lines.max_line_bytes == part_limit(LIMITED)
    with pytest.raises(ember.MetricsInputError, match="Limit exceeded"):
        stream.feed(b'{"actions":{"A":"')
        for _ in range(GIB // CHUNK):
            stream.feed(b"a" * CHUNK)
            assert lines.partial_size <= most
    assert lines.partial_size == 0 and not lines.active
    # Long lines that do end: each is compared once, then the strict reader takes over.
    long = b"a" * (2 * lines.max_line_bytes)  # past the line ceiling and max_string_length
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


def test_regression_part_memory_was_not_proportional_to_the_scenario():
    # Every record was read with the reader's 64 MiB part limit: 64 MiB of
    # '[],' in one step built 22 million lists (1.5 GB, 11 s) before the
    # refusal, whatever the scenario.  The limit now follows the scenario.
    message = refused_early(HEAD + b'{"actions":[', b"[],", r"^\$\.steps\[0\]\.actions\[\d+\]\S*: Limit exceeded")
    assert "max_part_bytes=1048576" in message
    with pytest.raises(ember.ReplayMismatchError, match="max_part_bytes=1048576"):
        ember.verify_replay(LIMITED, endless(HEAD + b'{"actions":[', b"[],", [0]))
