"""The results layer's statuses-only reading (``read_results(statuses_only=True)``, evaluate's resume).

It keeps a byte per (policy, episode) instead of a ``Row``: compared here,
row by row, with the full reading of the same bytes: the same status for
every key, the same counts, and the same refusals with the same messages.
"""

import random

import pytest

from ember.errors import ResultsError
from ember.results import results_of_bytes

from helpers.ranking_results import campaign_dict, canonical_line, failed_row, hand_metrics, ok_row

H1 = "sha256:" + "1" * 64
H2 = "sha256:" + "2" * 64
POLICIES = ("p", "q", "r")
SCENARIOS = [("a", H1, "a.json", [0, 3, 5, 9, 20]), ("b", H2, "b.json", [7, 2, 40, 1])]  # b: seeds not ascending


def statuses_of_full(results):
    return {(policy, key): ("ok" if row.ok else "failed") for (policy, key), row in results.counting.items()}


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
    full = results_of_bytes(campaign, data)
    compact = results_of_bytes(campaign, data, statuses_only=True)
    assert compact.counting is None
    expected = statuses_of_full(full)
    for policy in POLICIES + ("new-policy",):
        for _, shash, _, seeds in SCENARIOS + [("z", "sha256:" + "9" * 64, "z.json", [0])]:
            for episode_seed in seeds + [999]:
                key = (shash, episode_seed)
                assert compact.statuses.get(policy, key) == expected.get((policy, key))
    assert compact.statuses.ok == sum(status == "ok" for status in expected.values())
    assert compact.statuses.failed == sum(status == "failed" for status in expected.values())
    assert (compact.lines, compact.episodes_sha256, compact.torn) == (full.lines, full.episodes_sha256, full.torn)


def test_a_row_after_an_ok_row_is_refused_alike():
    campaign = campaign_dict("c", SCENARIOS, [(p, "builtin", "greedy") for p in POLICIES])
    data = (
        canonical_line(failed_row("p", "b", H2, 40))
        + canonical_line(ok_row("p", hand_metrics("b", H2, 40)))
        + canonical_line(ok_row("q", hand_metrics("a", H1, 9)))
        + canonical_line(failed_row("p", "b", H2, 40))
    )
    messages = []
    for statuses_only in (False, True):
        with pytest.raises(ResultsError) as caught:
            results_of_bytes(campaign, data, statuses_only=statuses_only)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0].endswith("after its ok row on line 2")
