"""Limits never refuse a record the simulator writes for a valid scenario (issue 11, item 2).

Before, the part limit was capped at 64 MiB: a scenario of 250,000 people
with 64-character IDs (valid) ran, but ``metrics`` and ``replay`` refused
its record.  Each bound now comes from the scenario's largest valid part
(``largest_part_bytes``); tests check that bound against parts the
simulator really writes, and that it is tight (an upper bound a worst-case
step reaches), so what no valid record can be is still refused.
"""

import dataclasses
import io

import pytest

import ember
from ember.canonical import canonical_json
from ember.record import limits
from ember.record.limits import DEFAULT_LIMITS, record_limits
from ember.record.pipeline import RecordInput, read_into
from ember.scenario import compile_scenario

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
    """The issue's scenario: 250,000 people with 64-character IDs on a 510 x 510 grid."""
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
