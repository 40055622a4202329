"""The report in a real browser: headless Chromium over the DevTools protocol (a pipe, no websocket).

The page must load with no console error, no uncaught exception, no failed
load and no request beyond ``file:``/``data:`` URLs, its script must run
(the sortable leaderboard), and its screenshot must not be blank.  The
checker itself is tested on pages that break each rule.
"""

import os
import shutil

import pytest

from ember.report import build_report

from helpers.browser import CHROMIUM, DevTools, assert_not_blank, load_page
from helpers.ranking_results import builtin_results, failed_row


@pytest.fixture(scope="module")
def chromium_path():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path, tmp_path_factory):
    started = DevTools(chromium_path, str(tmp_path_factory.mktemp("chromium-profile")))
    yield started
    started.close()


# --- the checker catches what it must ------------------------------------------------------------


BROKEN_PAGES = {
    "uncaught exception": ("<p>x</p><script>window.undefinedFunction();</script>", "uncaught exception"),
    "console.error": ("<p>x</p><script>console.error('deliberate');</script>", "console.error: deliberate"),
    "error in a timer": ("<p>x</p><script>setTimeout(function () { null.x; }, 10);</script>", "uncaught exception"),
    "network request": ('<p>x</p><img src="https://example.com/pixel.png">', "request outside the page"),
    "missing file": ('<p>x</p><script src="no-such-file.js"></script>', "log error"),
}


def test_checker_catches_broken_pages(browser, tmp_path):
    """Each deliberate fault is reported (so a clean report means something)."""
    for i, (name, (body, expected)) in enumerate(sorted(BROKEN_PAGES.items())):
        page = tmp_path / f"broken{i}.html"
        page.write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
            f"</head><body>{body}</body></html>"
        )
        check = load_page(browser, page)
        assert any(expected in problem for problem in check.problems), (name, check.problems)


def test_blank_screenshot_is_caught(browser, tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body></body></html>")
    check = load_page(browser, page)
    assert check.problems == []
    with pytest.raises(AssertionError, match="blank-looking"):
        assert_not_blank(check.png)


# --- the report --------------------------------------------------------------------------------


SORT_BY_CASUALTIES_DESCENDING = """
(function () {
  var table = document.querySelector("#leaderboard table.sortable");
  var header = Array.prototype.find.call(table.tHead.rows[0].cells, function (th) {
    return th.textContent.trim() === "casualties"; });
  header.click(); header.click();
  var policy = Array.prototype.findIndex.call(table.tHead.rows[0].cells, function (th) {
    return th.textContent.trim() === "policy"; });
  var names = Array.prototype.map.call(table.tBodies[0].rows, function (r) {
    return r.cells[policy].textContent.trim(); });
  return {ready: document.documentElement.getAttribute("data-ready"), order: names,
          svgs: document.querySelectorAll("figure svg").length};
})()
"""


def test_report_renders_cleanly_in_chromium(browser, tmp_path):
    results = builtin_results(
        tmp_path / "results", scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0, 1)))
    )
    results.append(failed_row("greedy-agent", "small-room", results.campaign["scenarios"][0]["scenario_hash"], 0))
    results.campaign["policies"].append({"name": "greedy-agent", "agent": "python3 agent.py", "step_timeout": 10.0})
    results.write_campaign()
    page, warnings = build_report(results.campaign, results.episodes())
    assert warnings == []
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, SORT_BY_CASUALTIES_DESCENDING)
    assert check.problems == []
    assert all(url.startswith("file:") for url in check.requests) and len(check.requests) == 1
    # The script ran: the table sorted by casualties, most first.
    assert check.script_result == {"ready": "1", "order": ["stay", "random", "greedy"], "svgs": 4}
    assert_not_blank(check.png)
    shot = tmp_path / "report.png"
    shot.write_bytes(check.png)
    if os.environ.get("EMBER_REPORT_SCREENSHOT"):  # keep a copy to look at
        shutil.copyfile(shot, os.environ["EMBER_REPORT_SCREENSHOT"])


STATISTICS_ON_SCREEN = """
(function () {
  function shown(element) {
    var box = element.getBoundingClientRect();
    var style = getComputedStyle(element);
    return box.width > 0 && box.height > 0 && style.visibility !== "hidden" && style.display !== "none";
  }
  var table = document.querySelector("#leaderboard table.sortable");
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) { return th.textContent.trim(); });
  var rows = Array.prototype.map.call(table.tBodies[0].rows, function (r) {
    var cell = function (name) { return r.cells[heads.indexOf(name)]; };
    var bars = Array.prototype.map.call(r.querySelectorAll(".ci-bar"), function (bar) {
      var outer = bar.getBoundingClientRect(), range = bar.querySelector(".ci-range").getBoundingClientRect();
      var tick = bar.querySelector(".ci-point").getBoundingClientRect();
      return {shown: shown(bar), inside: range.left >= outer.left - 0.5 && range.right <= outer.right + 0.5,
              tickInRange: tick.left + tick.width / 2 >= range.left - 1.5 &&
                           tick.left + tick.width / 2 <= range.right + 1.5};
    });
    return {rank: cell("rank").textContent.trim(), interval: cell("rank 95%").textContent.trim(),
            group: cell("group").textContent.trim(), groupShown: shown(cell("group").querySelector(".group")),
            policy: cell("policy").textContent.trim(), bars: bars};
  });
  var warnings = Array.prototype.map.call(document.querySelectorAll("#leaderboard .warning"), function (w) {
    return {text: w.textContent.trim(), shown: shown(w), single: w.classList.contains("single")};
  });
  var sentences = Array.prototype.map.call(document.querySelectorAll("#statistics ul.sentences li"), function (li) {
    return {text: li.textContent.trim(), shown: shown(li)};
  });
  var pairRows = document.querySelectorAll("#statistics table")[0].tBodies[0].rows;
  var pairs = Array.prototype.map.call(pairRows, function (r) {
    return Array.prototype.map.call(r.cells, function (c) { return c.textContent.trim(); });
  });
  return {rows: rows, warnings: warnings, sentences: sentences, pairs: pairs,
          warningAboveBoard: warnings.length > 0 &&
            document.querySelector("#leaderboard .warning").getBoundingClientRect().bottom
              <= table.getBoundingClientRect().top};
})()
"""


def test_statistics_show_in_chromium(browser, tmp_path):
    """Rank intervals and groups beside the ranks, interval bars on the totals, the pairs with their sentences
    and p-values, the public-seeds note and the few-seed warnings (the single-seed one plainest) are on the
    rendered page."""
    from ember.stats import compute_statistics
    from ember.stats.text import disagreement_sentence, p_value_text, pair_sentence

    results = builtin_results(
        tmp_path / "results", scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0,)))
    )
    page, _ = build_report(results.campaign, results.episodes(), 1000, 3)
    statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 3)
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, STATISTICS_ON_SCREEN)
    assert check.problems == []
    shown = check.script_result
    assert [row["policy"] for row in shown["rows"]] == [p["policy"] for p in statistics["policies"]]
    for row, entry in zip(shown["rows"], statistics["policies"]):
        low, high = entry["rank_interval"]
        assert row["rank"] == str(entry["rank"]) and row["group"] == str(entry["group"]) and row["groupShown"]
        assert row["interval"] == (str(low) if low == high else f"{low}–{high}")
        assert len(row["bars"]) == 4  # casualties, stranded, evacuated, person-time
        assert all(bar["shown"] and bar["inside"] and bar["tickInRange"] for bar in row["bars"]), row["bars"]
    warnings = shown["warnings"]
    # First the public seeds (isolation.md §4), then the few-seed warnings, the single-seed one plainest.
    assert [w["single"] for w in warnings] == [False, True, False] and all(w["shown"] for w in warnings)
    assert warnings[0]["text"].startswith("public seeds: a policy could have learned its seed from the fire. ")
    assert warnings[1]["text"].startswith("One seed only: 1 scenario has a single seed (bottleneck)")
    assert shown["warningAboveBoard"]
    # A pair the bootstrap separates with a level sign test says why both hold, in the same item.
    whys = [disagreement_sentence(p, statistics["episodes"]) for p in statistics["pairs"]]
    expected = [
        pair_sentence(p, 1000) + ("" if why is None else f" {why}") for p, why in zip(statistics["pairs"], whys)
    ]
    assert whys[0] is not None and whys[0].startswith("Why both hold: separated compares the campaign totals")
    assert [s["text"] for s in shown["sentences"]] == expected and all(s["shown"] for s in shown["sentences"])
    assert "is above" in expected[0] and "of 1,000 resamples" in expected[0]
    assert [row[-1] for row in shown["pairs"]] == [p_value_text(p["sign_test"]["p_value"]) for p in statistics["pairs"]]
    assert_not_blank(check.png)
