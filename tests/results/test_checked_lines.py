"""Reading the rows read before (``CheckedLines``) and ranking them again (``ranking_of(kept=...)``): the same
results and bytes as a fresh reading, with only new lines checked and only changed policies summed."""

import pytest

from ember import ranking as ranking_module
from ember.errors import ResultsError
from ember.ranking import ranking_bytes, ranking_of
from ember.results import CheckedLines, OkRows, StatisticsRules, results_of_bytes
from ember.results import reader as reader_module

from helpers.ranking_results import canonical_line, hand_metrics, ok_row
from helpers.stats_results import hand_results, scenario_hash_of
from helpers.strict import assert_same_json

SCENARIOS = [("one", [0, 1, 2]), ("two", [0, 1])]


def values(policy, sid, seed):
    base = sum(map(ord, policy)) % 5
    return {
        "casualties": (seed + base) % 2,
        "stranded": (seed * base) % 2,
        "time_to_safety": 3 * seed + base,
        "histogram": {1 + (seed + base) % 3: 1 + base},
    }


def rows_of(policy):
    return [
        canonical_line(ok_row(policy, hand_metrics(sid, scenario_hash_of(sid), seed, **values(policy, sid, seed))))
        for sid, seeds in SCENARIOS
        for seed in seeds
    ]


def counted(monkeypatch):
    """The lines parsed from here on (the reader's ``strict_json`` calls)."""
    parsed = []
    original = reader_module.strict_json
    monkeypatch.setattr(reader_module, "strict_json", lambda data: parsed.append(data) or original(data))
    return parsed


def read(campaign, episodes, checked=None, rules=None):
    ok_rows = OkRows()
    results = results_of_bytes(campaign, episodes, consumers=(ok_rows,), checked=checked, rules=rules)
    return results, ok_rows


def same_reading(first, second):
    (a, a_rows), (b, b_rows) = first, second
    assert (a.lines, a.episodes_sha256, a.torn) == (b.lines, b.episodes_sha256, b.torn)
    assert sorted(a_rows.by_key) == sorted(b_rows.by_key)
    for slot, row in a_rows.by_key.items():
        other = b_rows[slot]
        for field in ("line", "offset", "length", "previous", "policy", "key", "scenario_id", "ok", "record"):
            assert getattr(row, field) == getattr(other, field), (slot, field)
        assert row.episode.counts_key() == other.episode.counts_key()
        assert row.episode.exposure() == other.episode.exposure()


def test_lines_read_before_are_not_checked_again_and_give_the_same_results(tmp_path, monkeypatch):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q", "r"], values, fail={("q", "two", 1)})
    campaign, episodes = results.campaign, results.episodes()
    checked = CheckedLines()
    parsed = counted(monkeypatch)
    first = read(campaign, episodes, checked)
    assert len(parsed) == episodes.count(b"\n")
    same_reading(first, read(campaign, episodes))
    parsed.clear()
    again = read(campaign, episodes, checked, rules=StatisticsRules())
    assert parsed == []
    same_reading(again, read(campaign, episodes))
    # A row inserted before the others (the service's rows in log order): only it is parsed; the others'
    # places move, and the reading says so.
    campaign["policies"].append({"name": "s", "builtin": "greedy"})
    inserted = b"".join(rows_of("s")[:1]) + episodes
    parsed.clear()
    moved = read(campaign, inserted, checked)
    assert parsed == [rows_of("s")[0][:-1]]
    same_reading(moved, read(campaign, inserted))
    assert moved[1]["p", (scenario_hash_of("one"), 0)].line == 2


def test_a_kept_line_of_a_policy_no_longer_in_the_campaign_is_refused_as_a_fresh_one(tmp_path):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q"], values)
    campaign, episodes = results.campaign, results.episodes()
    checked = CheckedLines()
    read(campaign, episodes, checked)
    campaign["policies"] = [entry for entry in campaign["policies"] if entry["name"] != "q"]
    with pytest.raises(ResultsError) as fresh:
        read(campaign, episodes)
    with pytest.raises(ResultsError) as kept:
        read(campaign, episodes, checked)
    assert str(kept.value) == str(fresh.value) and "policy" in str(fresh.value)


def test_other_scenarios_check_every_line_again(tmp_path, monkeypatch):
    results = hand_results(tmp_path, SCENARIOS, ["p"], values)
    campaign, episodes = results.campaign, results.episodes()
    checked = CheckedLines()
    read(campaign, episodes, checked)
    campaign["scenarios"][1]["seeds"] = [0]  # seed 1 of "two" is no longer an episode of the campaign
    parsed = counted(monkeypatch)
    with pytest.raises(ResultsError) as refused:
        read(campaign, episodes, checked)
    assert "is not an episode of the campaign" in str(refused.value)
    assert len(parsed) == 5  # the lines up to the refused one, each checked afresh


def test_kept_ranking_totals_give_the_fresh_ranking_and_sum_only_what_changed(tmp_path, monkeypatch):
    results = hand_results(tmp_path, SCENARIOS, ["p", "q", "r"], values, fail={("q", "two", 1)})
    campaign, episodes = results.campaign, results.episodes()
    checked, kept = CheckedLines(), {}
    summed = []
    original = ranking_module._ranked_entry
    monkeypatch.setattr(ranking_module, "_ranked_entry", lambda name, *a: summed.append(name) or original(name, *a))

    def both(campaign, episodes):
        fresh = ranking_of(*read(campaign, episodes))
        incremental = ranking_of(*read(campaign, episodes, checked), kept=kept)
        assert ranking_bytes(incremental) == ranking_bytes(fresh)
        assert_same_json(incremental, fresh)
        return fresh

    both(campaign, episodes)
    assert sorted(kept) == ["p", "r"]
    summed.clear()
    both(campaign, episodes)
    assert summed == ["p", "r"]  # the fresh ranking's; the kept one summed nothing
    # q's failed episode runs again, s arrives before everyone: q and s are summed, p and r kept.
    campaign["policies"].append({"name": "s", "builtin": "greedy"})
    again = canonical_line(ok_row("q", hand_metrics("two", scenario_hash_of("two"), 1, **values("q", "two", 1))))
    grown = b"".join(rows_of("s")) + episodes + again
    summed.clear()
    fresh = both(campaign, grown)
    assert summed == ["p", "q", "r", "s", "q", "s"]
    assert sorted(entry["policy"] for entry in fresh["ranked"]) == sorted(kept) == ["p", "q", "r", "s"]
    # r withdrawn: dropped from what is kept.
    campaign["policies"] = [entry for entry in campaign["policies"] if entry["name"] != "r"]
    shrunk = b"".join(line for line in grown.splitlines(keepends=True) if b'"policy":"r"' not in line)
    summed.clear()
    both(campaign, shrunk)
    assert summed == ["p", "q", "s"] and sorted(kept) == ["p", "q", "s"]
