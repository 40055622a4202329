"""The counting table (results/counting.py ``CountingTable``: ``Results.statuses``, what every reader uses).

It keeps a few bytes per (policy, episode) instead of a ``Row``: compared
here, key by key, with the counting rows computed whole from the parsed
lines (the last row of each policy and key): the same status, line and
place for every key, the same counts (each policy's too); and the
consumers of the one row iterator see every row, in file order.
"""

import hashlib
import json
import random

import pytest

from ember.errors import ResultsError
from ember.results import results_of_bytes

from helpers.ranking_results import campaign_dict, canonical_line, failed_row, hand_metrics, ok_row
from helpers.results_lines import H1, H2, campaign, refused, row

POLICIES = ("p", "q", "r")
SCENARIOS = [("a", H1, "a.json", [0, 3, 5, 9, 20]), ("b", H2, "b.json", [7, 2, 40, 1])]  # b: seeds not ascending


def counting_of_lines(data):
    """(policy, key) -> (status, line, offset, length, previous) of the last row of each, computed whole."""
    counting, offset = {}, 0
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        value = json.loads(line)
        slot = (value["policy"], (value["scenario_hash"], value["seed"]))
        previous = counting[slot][4] + 1 if slot in counting else 0
        counting[slot] = (value["status"], number, offset, len(line), previous)
        offset += len(line) + 1
    return counting


class Seen:
    def __init__(self):
        self.lines = []

    def add(self, row):
        self.lines.append((row.line, row.value["policy"], row.ok, row.metrics is not None))


@pytest.mark.parametrize("seed", range(12))
def test_statuses_equal_the_full_reading(seed):
    draw = random.Random(seed)
    campaign = campaign_dict("c", SCENARIOS, [(p, "builtin", "greedy") for p in POLICIES])
    lines = []
    for _ in range(draw.randrange(1, 60)):
        scenario_id, shash, _, seeds = draw.choice(SCENARIOS)
        policy, episode_seed = draw.choice(POLICIES), draw.choice(seeds)
        if draw.random() < 0.5:
            lines.append(failed_row(policy, scenario_id, shash, episode_seed))
        else:
            lines.append(ok_row(policy, hand_metrics(scenario_id, shash, episode_seed)))
    data, seen_ok = b"", set()
    for value in lines:
        key = (value["policy"], value["scenario_hash"], value["seed"])
        if key in seen_ok:
            continue  # a row after an ok row is refused (below); keep this file readable
        seen_ok |= {key} if value["status"] == "ok" else set()
        data += canonical_line(value)
    seen = Seen()
    compact = results_of_bytes(campaign, data, consumers=(seen,))
    expected = counting_of_lines(data)
    for policy in POLICIES + ("new-policy",):
        for _, shash, _, seeds in SCENARIOS + [("z", "sha256:" + "9" * 64, "z.json", [0])]:
            for episode_seed in seeds + [999]:
                key = (shash, episode_seed)
                want = expected.get((policy, key))
                assert compact.statuses.get(policy, key) == (None if want is None else want[0])
                assert compact.statuses.line(policy, key) == (None if want is None else want[1])
                place = compact.statuses.place(policy, key)
                got = None if place is None else ("ok" if place.ok else "failed", *place_tuple(place))
                assert got == want
    assert compact.statuses.ok == sum(want[0] == "ok" for want in expected.values())
    assert compact.statuses.failed == sum(want[0] == "failed" for want in expected.values())
    for policy in POLICIES + ("new-policy",):  # one policy's counts, from its status bytes
        mine = [want[0] for (name, _), want in expected.items() if name == policy]
        assert compact.statuses.tally(policy) == (mine.count("ok"), mine.count("failed"))
    assert compact.lines == len(lines_of(data))
    assert compact.episodes_sha256 == hashlib.sha256(data).hexdigest() and compact.torn == b""
    assert seen.lines == [
        (number, json.loads(line)["policy"], json.loads(line)["status"] == "ok", json.loads(line)["status"] == "ok")
        for number, line in enumerate(lines_of(data), 1)
    ]


def lines_of(data):
    return data.split(b"\n")[:-1]


def place_tuple(place):
    return (place.line, place.offset, place.length, place.previous)


def test_a_row_after_an_ok_row_is_refused_alike():
    campaign = campaign_dict("c", SCENARIOS, [(p, "builtin", "greedy") for p in POLICIES])
    data = (
        canonical_line(failed_row("p", "b", H2, 40))
        + canonical_line(ok_row("p", hand_metrics("b", H2, 40)))
        + canonical_line(ok_row("q", hand_metrics("a", H1, 9)))
        + canonical_line(failed_row("p", "b", H2, 40))
    )
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(campaign, data)
    assert str(caught.value) == (
        f'episodes.jsonl:4: a row for policy "p", scenario "{H2}", seed 40 after its ok row on line 2'
    )


def test_a_row_after_an_ok_row_is_refused_and_a_failed_row_may_be_followed():
    failed = failed_row("p", "a", H1, 0)
    results = results_of_bytes(campaign(), canonical_line(failed) + canonical_line(row()))
    counting = results.statuses.place("p", (H1, 0))
    assert counting.ok and counting.previous == 1 and counting.line == 2
    error = refused(campaign(), failed, row(), row())
    assert str(error) == f'episodes.jsonl:3: a row for policy "p", scenario "{H1}", seed 0 after its ok row on line 2'
