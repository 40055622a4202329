"""``ember report``: a self-contained page with the ranking's numbers (the browser test is test_report_browser.py)."""

import html
import html.parser
import os
import re
import sys

import pytest

from ember.cli import main
from ember.errors import MissingExtraError
from ember.ranking import compute_ranking
from ember.report import build_report
from ember.report.data import EpisodeView, evacuation_curve
from ember.results import EpisodeOutcome
from ember.stats import compute_statistics
from ember.stats.text import p_value_text, pair_sentence, percent, share_of_episodes_text

from helpers.ranking_results import (
    builtin_metrics,
    builtin_results,
    campaign_dict,
    canonical_line,
    failed_row,
    hand_metrics,
    ok_row,
)

H1 = "sha256:" + "1" * 64


class Page(html.parser.HTMLParser):
    """Every tag with its attributes, and the text of each table's cells row by row."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.tables, self._cell = [], [], None
        self.sections, self._section = {}, None  # section id -> its tables
        self.feed(text)

    def section(self, name):
        return self.sections.get(name, [])

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "section":
            self._section = dict(attrs).get("id")
        if tag == "table":
            self.tables.append([])
            self.sections.setdefault(self._section, []).append(self.tables[-1])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    results = builtin_results(tmp_path_factory.mktemp("results"))
    shash = results.campaign["scenarios"][0]["scenario_hash"]
    results.campaign["policies"].append({"name": "late-agent", "agent": "python3 a.py", "step_timeout": 10.0})
    results.write_campaign()
    results.append(failed_row("late-agent", "small-room", shash, 1, error="agent timed out"))
    return results


@pytest.fixture(scope="module")
def report(results):
    return build_report(results.campaign, results.episodes())


def test_page_is_self_contained(report):
    page = Page(report[0])
    for tag, attrs in page.tags:
        for name in ("src", "href", "xlink:href"):
            value = attrs.get(name)
            assert value is None or value.startswith(("#", "data:")), (tag, name, value)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    text = report[0]
    assert "@import" not in text
    assert re.findall(r"url\((?!#)", text) == []  # only references inside the page (SVG clip paths)
    assert "url(#" in text
    assert text.count("<svg") == 4 and "<?xml" not in text


def test_leaderboard_cells_are_the_ranking(results, report):
    ranking, _ = compute_ranking(results.campaign, results.episodes())
    statistics, _ = compute_statistics(results.campaign, results.episodes())
    page = Page(report[0])
    board, unranked = page.section("leaderboard")
    assert board[0][:8] == ["rank", "rank 95%", "group", "policy", "kind", "casualties", "stranded", "evacuated"]
    assert len(board) == 1 + len(ranking["ranked"])
    for row, entry, stats in zip(board[1:], ranking["ranked"], statistics["policies"]):
        assert row[:5] == [
            str(entry["rank"]),
            "–".join(dict.fromkeys(map(str, stats["rank_interval"]))),
            str(stats["group"]),
            entry["policy"],
            entry["kind"],
        ]
        for cell, field in zip(row[5:9], ("casualties", "stranded", "evacuated", "person_time_to_safety_total")):
            low, high = stats[field]["interval"]
            assert cell == f"{stats[field]['total']} [{low}, {high}]"
        assert stats["casualties"]["total"] == entry["casualties"] and stats["stranded"]["total"] == entry["stranded"]
        assert stats["person_time_to_safety_total"]["total"] == entry["person_time_to_safety_total"]
        assert stats["evacuated"]["total"] == entry["evacuated"]
        assert row[10] == f"{entry['exposure']:.4f}"
    assert unranked[1][:5] == ["late-agent", "agent", "0", "1", "2"]
    assert "1 failed, 2 missing of 3 episodes" in unranked[1][5]
    (pairs,) = page.section("pairs")
    assert [row[:5] for row in pairs[1:]] == [
        [p["above"], p["below"], str(p["above_better"]), str(p["equal"]), str(p["below_better"])]
        for p in ranking["pairs"]
    ]
    text = html.unescape(report[0])
    assert ranking["formula"] in text and "Ranking 1.0" in text and ranking["source"]["sha256"] in text


def test_statistics_section_shows_pairs_sentences_and_episode_shares(results, report):
    statistics, _ = compute_statistics(results.campaign, results.episodes())
    page = Page(report[0])
    pairs, episodes = page.section("statistics")
    assert pairs[0][0:2] == ["above", "below"] and pairs[0][-1] == "sign test p"
    for row, pair in zip(pairs[1:], statistics["pairs"]):
        assert row[:2] == [pair["above"], pair["below"]]
        assert row[2] == " / ".join(percent(pair["order"][k]) for k in ("above", "equal", "below"))
        assert row[3] == ("yes" if pair["separated"] else "no")
        low, high = pair["casualties_difference"]["interval"]
        assert row[4] == f"{pair['casualties_difference']['value']:+} [{low:+}, {high:+}]"
        test = pair["sign_test"]
        assert row[7:] == [f"{test['above_better']}:{test['below_better']}", p_value_text(test["p_value"])]
    text = html.unescape(report[0])
    for pair in statistics["pairs"]:
        assert pair_sentence(pair, statistics["replicates"]) in text
    for row, entry in zip(episodes[1:], statistics["policies"]):
        assert row == [
            entry["policy"],
            share_of_episodes_text(entry["episodes_with_casualties"]),
            share_of_episodes_text(entry["episodes_with_loss"]),
        ]
    assert "fewer than 10 seeds (small-room (3))" in text


def test_per_scenario_table_shows_sums_and_seed_spread(results, report):
    ranking, _ = compute_ranking(results.campaign, results.episodes())
    statistics, _ = compute_statistics(results.campaign, results.episodes())
    (table,) = Page(report[0]).section("scenarios")
    assert table[0][-1] == "casualties 95%"
    for row, entry, stats in zip(table[1:], ranking["ranked"], statistics["policies"]):
        low, high = stats["by_scenario"]["small-room"]["casualties"]["interval"]
        assert row[10] == f"[{low}, {high}]"
        part = entry["by_scenario"]["small-room"]
        assert row[1:5] == [
            entry["policy"],
            "3",
            f"{part['evacuated']} of {part['population']}",
            str(part["casualties"]),
        ]
        per_seed = sorted(
            builtin_metrics("builtin:small-room", entry["policy"], s)["safety"]["casualties"] for s in (0, 1, 2)
        )
        assert row[8] == f"{per_seed[0]:g} / {per_seed[1]:g} / {per_seed[2]:g}"


def test_same_input_same_page(results, report):
    assert build_report(results.campaign, results.episodes()) == report


def test_evacuation_curve_by_hand():
    metrics = hand_metrics("s1", H1, 0, population=5, casualties=1, evacuation_steps={"a": 5, "b": 4, "c": 7, "d": 7})
    view = EpisodeView(0, EpisodeOutcome(metrics), metrics)
    assert evacuation_curve(view, 8) == [0.0, 0.0, 0.0, 0.0, 0.2, 0.4, 0.4, 0.8, 0.8]


def test_evacuation_curve_of_a_real_episode():
    metrics = builtin_metrics("builtin:small-room", "greedy", 0)
    view = EpisodeView(0, EpisodeOutcome(metrics), metrics)
    curve = evacuation_curve(view, view.steps)
    steps = metrics["time"]["evacuation_steps"]
    assert curve[-1] == metrics["safety"]["evacuated_rate"]
    for t, share in enumerate(curve):
        assert share == sum(1 for s in steps.values() if s <= t) / metrics["safety"]["population"]


def test_free_text_is_escaped_and_odd_ids_are_plotted():
    names = ["9.lives", "a-b_c", "Z"]
    source = "<b>bold</b> & $5$.json"  # a scenario source is any string; it shows in a caption
    campaign = campaign_dict("odd", [("s1", H1, source, (0, 1))], [(n, "builtin", "greedy") for n in names])
    rows = [
        ok_row(
            n,
            hand_metrics(
                "s1",
                H1,
                seed,
                casualties=i,
                time_to_safety=10 + seed,
                histogram={2: 3},
                evacuation_steps={"a": 3},
                exits={"e1": 1 + i},
            ),
        )
        for i, n in enumerate(names)
        for seed in (0, 1)
    ]
    page, _ = build_report(campaign, b"".join(canonical_line(r) for r in rows))
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt; &amp; $5$.json" in page
    assert page.count("<svg") == 4
    assert all(name in page for name in names)


def test_nothing_ranked_still_makes_a_page():
    campaign = campaign_dict("empty", [("s1", H1, "s1.json", (0,))], [("p", "builtin", "stay")])
    page, _ = build_report(campaign, canonical_line(failed_row("p", "s1", H1, 0)))
    assert "nothing is ranked" in page and "<svg" not in page


def test_cli_writes_the_page(results, report, tmp_path, monkeypatch, capsysbinary):
    monkeypatch.chdir(tmp_path)
    assert main(["report", results.path]) == 0
    out, err = capsysbinary.readouterr()
    assert out == b"" and err == b"ember: wrote report.html.\n"
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == report[0]
    assert main(["report", results.path, "-o", "-"]) == 0
    assert capsysbinary.readouterr().out == report[0].encode()
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


def test_cli_bad_input_writes_nothing(results, tmp_path, capsysbinary):
    target = tmp_path / "page.html"
    assert main(["report", str(tmp_path / "missing"), "-o", str(target)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and err.decode().count("\n") == 1 and "missing: no such directory" in err.decode()
    broken = builtin_results(tmp_path / "broken", policies=("greedy",))
    broken.append(b'{"policy": 1}\n')
    assert main(["report", broken.path, "-o", str(target)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and "episodes.jsonl:4: $: a row has exactly the keys" in err.decode()
    assert not target.exists()


def test_without_matplotlib_names_the_extra(results, tmp_path, monkeypatch, capsysbinary):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r"ember-eval\[report\]"):
        build_report(results.campaign, results.episodes())
    target = tmp_path / "page.html"
    assert main(["report", results.path, "-o", str(target)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and "pip install 'ember-eval[report]'" in err.decode() and err.decode().count("\n") == 1
    assert not target.exists()


def test_the_page_shows_the_statistics_of_the_same_b_and_seed(results, tmp_path, capsysbinary):
    """``ember report --replicates B --seed S`` draws the statistics that ``ember stats`` computes with them."""
    target = tmp_path / "page.html"
    assert main(["report", results.path, "-o", str(target), "--replicates", "1000", "--seed", "5"]) == 0
    capsysbinary.readouterr()
    page = target.read_text(encoding="utf-8")
    assert page == build_report(results.campaign, results.episodes(), 1000, 5)[0]
    assert "1,000 resamples, seed 5" in page and page != build_report(results.campaign, results.episodes())[0]


def test_cli_bad_resampling_options_write_nothing(results, tmp_path, capsysbinary):
    target = tmp_path / "page.html"
    for option, value in (("--replicates", "999"), ("--seed", "-1"), ("--replicates", "1_000")):
        with pytest.raises(SystemExit) as stopped:
            main(["report", results.path, "-o", str(target), option, value])
        assert stopped.value.code == 2
        out, err = capsysbinary.readouterr()
        assert out == b"" and err.decode().count("\n") == 1 and f"argument {option}: expected" in err.decode()
    assert not target.exists()


def test_without_numpy_names_the_report_extra(results, tmp_path, monkeypatch, capsysbinary):
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(
        MissingExtraError,
        match=r"^the report's statistics need numpy, scipy and threadpoolctl: pip install 'ember-eval\[report\]'$",
    ):
        build_report(results.campaign, results.episodes())
    target = tmp_path / "page.html"
    assert main(["report", results.path, "-o", str(target)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and err.decode().count("\n") == 1 and not target.exists()


def test_a_campaign_with_public_seeds_says_so(results, report, tmp_path, capsysbinary):
    # isolation.md §4 in service.md §5's words: the seeds are in campaign.json, the fire is a function of the seed.
    words = "public seeds: a policy could have learned its seed from the fire"
    text = report[0]
    start = text.index('<p class="warning" id="public-seeds" role="note">')
    assert text[start:].split(">", 1)[1].startswith(words + ". ")
    leaderboard = text.index('<section id="leaderboard">')
    assert leaderboard < start < text.index("<table", leaderboard)  # said above the board, not below it
    target = tmp_path / "page.html"
    assert main(["report", results.path, "-o", str(target)]) == 0
    assert words in target.read_text(encoding="utf-8")
    # A caller that knows the seeds were secret while the policies ran (a hidden track) leaves it out.
    page, _ = build_report(results.campaign, results.episodes(), public_seeds=False)
    assert words not in page and 'id="public-seeds"' not in page
    assert page == text[:start] + text[text.index("</p>", start) + len("</p>") :]
