"""``ember stats --format table|markdown``: shares in percent, rounded outward; why the two tests can differ."""

import json
import re

import pytest

from ember.cli import main
from ember.stats.text import share_interval_text

from helpers.stats_results import hand_results

SEEDS = tuple(range(24))


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def pair_results(path, above_wins, margin_won, margin_lost):
    """Two policies on 24 episodes: ``top`` wins ``above_wins`` of them by ``margin_won`` casualties and loses
    the rest by ``margin_lost``; the totals, not the count of episodes won, decide the order."""

    def metrics_of(policy, scenario_id, seed):
        won = seed < above_wins
        if policy == "top":
            return {"casualties": 0 if won else margin_lost, "population": 6}
        return {"casualties": margin_won if won else 0, "population": 6}

    return hand_results(path, [("hall", SEEDS)], ("top", "other"), metrics_of)


def statistics_and_table(capsys, results, fmt="table"):
    table = run(capsys, "stats", results.path, "--format", fmt, "--replicates", "1000")
    statistics = json.loads(run(capsys, "stats", results.path, "--replicates", "1000"))
    return statistics, table


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_separated_with_a_level_sign_test_says_why_both_hold(tmp_path, capsys, fmt):
    statistics, table = statistics_and_table(capsys, pair_results(tmp_path / "r", 12, 5, 1), fmt)
    (pair,) = statistics["pairs"]
    assert (pair["above"], pair["separated"]) == ("top", True)
    test = pair["sign_test"]
    assert (test["above_better"], test["below_better"], test["p_value"]) == (12, 12, 1.0)
    lines = table.splitlines()
    sentence = next(i for i, line in enumerate(lines) if "top is above other in" in line)
    why = lines[sentence + 1]
    assert why == ("  - " if fmt == "markdown" else "  ") + (
        "Why both hold: separated compares the campaign totals (casualties, then stranded, person-time to safety, "
        "exposure), and top's are smaller in at least 97.5% of resamples; the sign test counts only who wins each "
        "episode (12:12 episodes won, 0 level), not by how much, so a lead made of a few episodes or of large "
        "margins separates the totals without winning most episodes."
    )
    assert table.count("Why both hold") == 1


def test_a_clear_sign_test_without_separation_says_why_both_hold(tmp_path, capsys):
    statistics, table = statistics_and_table(capsys, pair_results(tmp_path / "r", 6, 4, 1))
    (pair,) = statistics["pairs"]
    assert (pair["above"], pair["separated"]) == ("top", False)
    test = pair["sign_test"]
    assert (test["above_better"], test["below_better"]) == (6, 18) and test["p_value"] < 0.05
    assert (
        "  Why both hold: the sign test counts only who wins each episode (6:18 episodes won, 0 level) and other wins "
        "clearly more; separated compares the campaign totals, and in more than 2.5% of resamples top's are not "
        "smaller than other's: the wins are by small margins, or a few large losses outweigh them."
    ) in table.splitlines()


def test_agreeing_evidence_adds_no_explanation(tmp_path, capsys):
    statistics, table = statistics_and_table(capsys, pair_results(tmp_path / "r", 24, 2, 1))
    (pair,) = statistics["pairs"]
    assert pair["separated"] is True and pair["sign_test"]["p_value"] < 0.05
    assert "Why both hold" not in table


def test_the_share_of_episodes_with_casualties_is_in_percent_rounded_outward(tmp_path, capsys):
    statistics, table = statistics_and_table(capsys, pair_results(tmp_path / "r", 12, 5, 1))
    for entry in statistics["policies"]:
        share = entry["episodes_with_casualties"]
        assert (share["count"], share["of"]) == (12, 24)
        low, high = share["interval"]
        cell = f"12 of 24 (50%) {share_interval_text(share['interval'])}"
        assert cell in table
        shown_low, shown_high = (float(end.rstrip("%")) / 100 for end in cell.split("[")[1].rstrip("]").split(", "))
        assert shown_low <= low and high <= shown_high  # the printed interval holds the exact one
    assert re.search(r"\b0\.\d{6}\b", table) is None  # no six-decimal share is left


@pytest.mark.parametrize(
    ("interval", "text"),
    [
        ([0.857526, 1.0], "[85.7%, 100%]"),
        ([0.003374, 0.096761], "[0.3%, 9.7%]"),
        ([0.0, 0.521824], "[0%, 52.2%]"),
        ([0.0004, 0.9996], "[0.0%, 100.0%]"),
        ([0.25, 0.5], "[25.0%, 50.0%]"),
    ],
)
def test_share_intervals_are_one_decimal_percent_rounded_outward(interval, text):
    assert share_interval_text(interval) == text
