"""A board of 1,000 policies: its page stays under 5 MB, fits 1,280 px, and keeps the served files' order.

The page is the one the service writes (``ember.report.board`` over ranking.json and statistics.json
computed by Ranking and Statistics), read in headless Chromium at 1,280 px: no horizontal scroll of the
page or of the leaderboard, the first 100 rows shown and the other 900 a click away, every policy in the
ranking's order, each row's numbers the statistics'.
"""

import json

import pytest

from ember.ranking import ranking_bytes, ranking_of
from ember.report.board import OPEN_LABEL, PAGE_ROWS, About, Progress, board_page, track_figures, track_of_rows
from ember.report.page import PUBLIC_SEEDS
from ember.results import OkRows, StatisticsRules, results_of_bytes
from ember.stats import statistics_bytes, statistics_of

from helpers.browser import CHROMIUM, DevTools, Tab
from helpers.ranking_results import campaign_dict, canonical_line, hand_metrics, ok_row

POLICIES = 1000
MAX_BYTES = 5 * 1024 * 1024
SCENARIOS = (("floor-a", "sha256:" + "a" * 64), ("floor-b", "sha256:" + "b" * 64))
SEEDS = tuple(range(5))


def policy_name(number):
    # As long as a TEAM.NAME may be (64 characters), so that the widest names are what is laid out.
    return f"team{number:04d}." + "p" * 55


def many_policies():
    """(campaign, episodes bytes, ranking, statistics) of POLICIES policies with spread totals."""
    names = [policy_name(i) for i in range(POLICIES)]
    scenarios = [(sid, shash, f"{sid}.json", SEEDS) for sid, shash in SCENARIOS]
    campaign = campaign_dict("big", scenarios, [(name, "records", f"records/{name}") for name in names])
    lines = []
    for number, name in enumerate(names):
        for sid, shash in SCENARIOS:
            for seed in SEEDS:
                metrics = hand_metrics(
                    sid, shash, seed, casualties=(number * 7 + seed) % 5, population=40,
                    time_to_safety=1000 + (number * 13) % 97, histogram={1: number % 3, 2: 5},
                    evacuation_steps={"3": 10, "9": 20}, exits={"E1": 20, "E2": 10},
                )  # fmt: skip
                row = ok_row(name, metrics)
                row["record"] = f"records/{name}/{sid}/{seed}.record"
                row["record_sha256"] = f"{number * 100 + seed:064x}"
                lines.append(canonical_line(row))
    episodes = b"".join(lines)
    ok_rows = OkRows()
    checked = results_of_bytes(campaign, episodes, rules=StatisticsRules(), consumers=(ok_rows,))
    ranking = ranking_of(checked, ok_rows)
    statistics = statistics_of(checked, ok_rows, 1000, 0, ranking=ranking)
    return campaign, episodes, json.loads(ranking_bytes(ranking)), json.loads(statistics_bytes(statistics))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    campaign, episodes, ranking, statistics = many_policies()
    track = track_of_rows(
        "open", OPEN_LABEL, campaign, episodes, ranking, statistics, lambda h: f"/api/records/{h}", True
    )
    track.plots = True
    for number, entry in enumerate(ranking["ranked"]):
        track.about[entry["policy"]] = About(
            f"/submissions/{number:08x}-0000-4000-8000-000000000000",
            "2026-12-03T05:38:51.123456Z",
            "A planner that walks away from the fire, " * 5,  # 200 characters: the longest description
            "https://example.org/papers/" + "x" * 270,  # and the longest link
        )
    track.figures = track_figures(track)
    facts = {"description": "A board of many", "closes": "2026-12-24T00:00:00.000000Z", "teams": POLICIES}
    progress = [Progress(f"team{i}", "p" * 50, 1, 10) for i in range(50)]
    text = board_page("big", {"simulator": "1.0"}, 7, [track], progress, "/api/boards/big", facts=facts)
    path = tmp_path_factory.mktemp("page") / "board.html"
    path.write_bytes(text.encode("utf-8"))
    return path, ranking, statistics


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    started = DevTools(CHROMIUM, str(tmp_path_factory.mktemp("chromium-profile")))
    yield started
    started.close()


LAID_OUT = """
(function () {
  var table = document.querySelector("#open-leaderboard table");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var visible = rows.filter(function (r) { return r.offsetParent !== null; });
  var button = document.querySelector("button.unfold");
  return {
    pageWidth: document.documentElement.scrollWidth,
    tableWidth: table.scrollWidth, wrapWidth: table.parentNode.clientWidth,
    rows: rows.length, visible: visible.length, button: button ? button.textContent : null,
    names: rows.map(function (r) { return r.cells[3].querySelector(".name").textContent; }),
    casualties: rows.map(function (r) { return r.cells[5].textContent.replace(/\\s+/g, " ").trim(); }),
    publicSeeds: document.body.textContent.split("PUBLIC_SEEDS").length - 1,
    figures: document.querySelectorAll("#open-plots figure svg").length
  };
})()
""".replace("PUBLIC_SEEDS", PUBLIC_SEEDS)

UNFOLD = """
(function () {
  document.querySelector("button.unfold").click();
  var rows = document.querySelector("#open-leaderboard table").tBodies[0].rows;
  return {visible: Array.prototype.filter.call(rows, function (r) { return r.offsetParent !== null; }).length,
          button: document.querySelectorAll("button.unfold").length,
          pageWidth: document.documentElement.scrollWidth};
})()
"""


def test_a_thousand_policy_page_is_under_5_mb_and_fits_1280_px(page, browser):
    path, ranking, statistics = page
    assert path.stat().st_size < MAX_BYTES
    tab = Tab(browser)
    tab.open(f"file://{path}")
    shown = tab.evaluate(LAID_OUT)
    unfolded = tab.evaluate(UNFOLD)
    check = tab.check(shown, b"")
    tab.close()
    assert check.problems == []
    # No horizontal scroll: of the page, and of the leaderboard inside it.
    assert shown["pageWidth"] <= 1280 and unfolded["pageWidth"] <= 1280
    assert shown["tableWidth"] <= shown["wrapWidth"]
    # Every policy is on the page, in the ranking's order; the first PAGE_ROWS show, the rest one click away.
    assert shown["names"] == [entry["policy"] for entry in ranking["ranked"]]
    assert (shown["rows"], shown["visible"]) == (POLICIES, PAGE_ROWS)
    assert shown["button"] == f"Show the other {POLICIES - PAGE_ROWS} policies"
    assert (unfolded["visible"], unfolded["button"]) == (POLICIES, 0)
    by_name = {entry["policy"]: entry for entry in statistics["policies"]}
    for name, text in zip(shown["names"], shown["casualties"], strict=True):
        low, high = by_name[name]["casualties"]["interval"]
        assert text == f"{by_name[name]['casualties']['total']} [{low}, {high}]"
    # The public-seeds warning is said once; the report's four plots are drawn (of the first ten).
    assert shown["publicSeeds"] == 1
    assert shown["figures"] == 4
