"""BoardStatistics (a board growing by rows) against the batch computation of the same reading, byte for byte."""

import pytest

from ember.results import OkRows, StatisticsRules, results_of_bytes
from ember.stats import BoardStatistics, compute_statistics, statistics_bytes

from helpers.ranking_results import failed_row, hand_metrics, ok_row
from helpers.stats_results import hand_results, scenario_hash_of

SCENARIOS = [("one", [0, 1, 2]), ("two", [0, 1])]


def values(policy, sid, seed):
    base = sum(map(ord, policy)) % 5
    return {
        "casualties": (seed + base) % 2,
        "stranded": (seed * base) % 2,
        "time_to_safety": 3 * seed + base,
        "histogram": {1 + (seed + base) % 3: 1 + base},
    }


def reading(results):
    ok_rows = OkRows()
    read = results_of_bytes(results.campaign, results.episodes(), rules=StatisticsRules(), consumers=(ok_rows,))
    return read, ok_rows


def batch(results, replicates, seed):
    return statistics_bytes(compute_statistics(results.campaign, results.episodes(), replicates, seed)[0])


def rows_of(policy, scenarios=SCENARIOS):
    return [
        ok_row(policy, hand_metrics(sid, scenario_hash_of(sid), seed, **values(policy, sid, seed)))
        for sid, seeds in scenarios
        for seed in seeds
    ]


def add_policy(results, name):
    results.campaign["policies"].append({"name": name, "builtin": "greedy"})
    results.write_campaign()


@pytest.mark.parametrize(("replicates", "seed"), [(1000, 0), (1001, 2**64 - 1)])
def test_rows_added_give_the_batch_bytes_and_keep_the_other_policies(tmp_path, replicates, seed):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q"], values, fail={("q", "two", 1)})
    board = BoardStatistics()
    assert board.update(*reading(results)) == ["p"]  # q is unranked: a failed row
    assert statistics_bytes(board.statistics(replicates, seed)) == batch(results, replicates, seed)
    kept = board.values()["p"]

    # q's episode runs again (ok this time) and a new policy r arrives: only their values are taken.
    results.append(ok_row("q", hand_metrics("two", scenario_hash_of("two"), 1, **values("q", "two", 1))))
    add_policy(results, "r")
    results.append(*rows_of("r"))
    assert sorted(board.update(*reading(results))) == ["q", "r"]
    assert board.values()["p"] is kept
    assert statistics_bytes(board.statistics(replicates, seed)) == batch(results, replicates, seed)

    # Nothing added: everything kept, the same bytes for another B and σ too.
    assert board.update(*reading(results)) == []
    assert statistics_bytes(board.statistics(1500, 7)) == batch(results, 1500, 7)


def test_new_episode_keys_drop_the_kept_values(tmp_path):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q"], values)
    board = BoardStatistics()
    board.update(*reading(results))
    results.campaign["scenarios"][1]["seeds"].append(5)  # the campaign grows by a seed
    results.write_campaign()
    results.append(*[row for name in ("p", "q") for row in rows_of(name, [("two", [5])])])
    assert sorted(board.update(*reading(results))) == ["p", "q"]
    assert statistics_bytes(board.statistics(1000, 3)) == batch(results, 1000, 3)


def test_a_policy_falling_out_of_the_ranking_is_dropped(tmp_path):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q"], values)
    board = BoardStatistics()
    board.update(*reading(results))
    add_policy(results, "r")  # r has no row yet: unranked, and nothing else changes
    results.append(failed_row("r", "one", scenario_hash_of("one"), 0))
    assert board.update(*reading(results)) == []
    assert sorted(board.values()) == ["p", "q"]
    assert statistics_bytes(board.statistics(1000, 0)) == batch(results, 1000, 0)


def test_statistics_before_an_update_is_refused():
    with pytest.raises(ValueError, match="before any update"):
        BoardStatistics().statistics(1000, 0)
