"""The service's board page as Report builds it (ember.report.board), read in headless Chromium.

Whatever the names (a team, a policy, a board), they are text on the
page, never markup; a track without record links (the hidden one before
the reveal) names no record; a track with nothing ranked says so.
"""

import json

import pytest

from ember.ranking import ranking_bytes, ranking_of
from ember.report.board import HIDDEN_LABEL, OPEN_LABEL, Progress, Track, board_page, track_of_rows
from ember.results import OkRows, StatisticsRules, results_of_bytes
from ember.stats import statistics_bytes, statistics_of

from helpers.browser import CHROMIUM, DevTools, load_page
from helpers.ranking_results import builtin_results

HOSTILE = '<img src="data:," onerror="window.injected = 1">&amp;</td></tr>'


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    started = DevTools(CHROMIUM, str(tmp_path_factory.mktemp("chromium-profile")))
    yield started
    started.close()


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """(campaign, episodes bytes, ranking.json and statistics.json as parsed) of a small finished campaign whose
    rows name records."""
    results = builtin_results(tmp_path_factory.mktemp("results"))
    lines = []
    for number, line in enumerate(results.episodes().splitlines()):
        row = json.loads(line)
        row["record"] = f"records/{row['policy']}/{row['scenario_id']}/{row['seed']}.record"
        row["record_sha256"] = f"{number:064x}"
        lines.append(json.dumps(row).encode())
    episodes = b"\n".join(lines) + b"\n"
    ok_rows = OkRows()
    checked = results_of_bytes(results.campaign, episodes, rules=StatisticsRules(), consumers=(ok_rows,))
    ranking = ranking_of(checked, ok_rows)
    statistics = statistics_of(checked, ok_rows, 1000, 0, ranking=ranking)
    # As the service reads them: from the files' bytes.
    return results.campaign, episodes, json.loads(ranking_bytes(ranking)), json.loads(statistics_bytes(statistics))


TEXTS = """
(function () {
  var open = document.querySelector("#open-submissions table").tBodies[0].rows[0];
  return {injected: window.injected === undefined ? null : window.injected,
          images: document.querySelectorAll("img").length,
          title: document.title, heading: document.querySelector("header h1").textContent,
          team: open.cells[0].textContent, policy: open.cells[1].textContent,
          labels: Array.prototype.map.call(document.querySelectorAll(".track-label"), function (l) {
            return l.textContent; }),
          records: Array.prototype.map.call(document.querySelectorAll("a.record"), function (a) {
            return a.getAttribute("href"); })};
})()
"""


def test_names_are_text_never_markup(browser, tmp_path, ranked):
    campaign, episodes, ranking, statistics = ranked
    tracks = [
        track_of_rows("open", OPEN_LABEL, campaign, episodes, ranking, statistics, lambda h: f"/api/records/{h}", True),
        track_of_rows("hidden", HIDDEN_LABEL, campaign, episodes, ranking, statistics),
    ]
    page = board_page(HOSTILE, {"simulator": "1.0"}, 7, tracks, [Progress(HOSTILE, HOSTILE + "x", 1, 3)], "/api/x")
    path = tmp_path / "board.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, TEXTS)
    assert check.problems == []
    shown = check.script_result
    assert shown["injected"] is None and shown["images"] == 0
    assert shown["title"] == f"EMBER board {HOSTILE}" and shown["heading"] == f"EMBER board {HOSTILE}"
    assert (shown["team"], shown["policy"]) == (HOSTILE, HOSTILE + "x")
    assert shown["labels"] == [OPEN_LABEL, HIDDEN_LABEL]
    # Only the open track links its records: one per ranked row.
    rows = [json.loads(line) for line in episodes.splitlines()]
    assert sorted(shown["records"]) == sorted(f"/api/records/{row['record_sha256']}" for row in rows)


def test_a_track_with_nothing_ranked_says_so():
    page = board_page("office", {}, 3, [Track("open", OPEN_LABEL)], [], "/api/boards/office")
    assert "No submission is ranked on this track yet." in page and OPEN_LABEL in page
    assert "No open submission." in page and 'data-board-version="3"' in page
    assert "/api/records/" not in page


SCRIPTED = '<script>window.injected = 2</script><b onmouseover="window.injected = 3">bold</b>'

ABOUT = """
(function () {
  var cells = Array.prototype.map.call(document.querySelectorAll("#open-leaderboard td.who"), function (td) {
    var link = td.querySelector("a.link");
    return {name: td.querySelector(".name").textContent, page: td.querySelector("a.name") ?
              td.querySelector("a.name").getAttribute("href") : null,
            description: td.querySelector(".description") ? td.querySelector(".description").textContent : null,
            link: link ? [link.getAttribute("href"), link.getAttribute("rel")] : null,
            anchors: td.querySelectorAll("a").length, when: td.querySelector(".when time") ?
              td.querySelector(".when time").getAttribute("datetime") : null};
  });
  return {injected: window.injected === undefined ? null : window.injected,
          scripts: document.querySelectorAll("script").length, bold: document.querySelectorAll("b").length,
          cells: cells, description: document.querySelector("#description").textContent,
          facts: document.querySelector("#facts").textContent,
          width: document.documentElement.scrollWidth};
})()
"""


def test_a_hostile_description_is_text_and_only_an_http_link_is_a_link(browser, tmp_path, ranked):
    """A team's description and link, and the board's description, are the submitter's words: text on the page,
    never markup; a link is a link only when it is http or https, and then rel="nofollow noopener"."""
    from ember.report.board import About

    campaign, episodes, ranking, statistics = ranked
    track = track_of_rows(
        "open", OPEN_LABEL, campaign, episodes, ranking, statistics, lambda h: f"/api/records/{h}", True
    )
    policies = [entry["policy"] for entry in ranking["ranked"]]
    links = ["javascript:window.injected = 4", "https://example.org/paper?a=1&b=<i>2</i>", "data:text/html,<b>x</b>"]
    for number, (policy, link) in enumerate(zip(policies, links, strict=True)):
        when = "2026-12-03T05:38:51.123456Z"
        track.about[policy] = About(f"/submissions/{number}", when, SCRIPTED + HOSTILE, link)
    facts = {"description": SCRIPTED, "closes": "2026-12-24T00:00:00.000000Z", "teams": 3, "submissions": 1}
    page = board_page("office", {}, 3, [track], [], "/api/x", facts=facts)
    path = tmp_path / "board.html"
    path.write_text(page, encoding="utf-8")
    check = load_page(browser, path, ABOUT)
    assert check.problems == []
    shown = check.script_result
    assert (shown["injected"], shown["scripts"], shown["bold"]) == (None, 1, 0)
    assert shown["description"] == SCRIPTED
    assert shown["facts"] == "closes 2026-12-24 00:00 UTC3 teams1 submission"
    assert [cell["name"] for cell in shown["cells"]] == policies
    assert [cell["page"] for cell in shown["cells"]] == ["/submissions/0", "/submissions/1", "/submissions/2"]
    assert all(cell["description"] == SCRIPTED + HOSTILE for cell in shown["cells"])
    assert all(cell["when"] == "2026-12-03T05:38:51.123456Z" for cell in shown["cells"])
    # Only the https link is one; the javascript: and data: ones are not on the page at all.
    assert [cell["link"] for cell in shown["cells"]] == [None, [links[1], "nofollow noopener"], None]
    assert [cell["anchors"] for cell in shown["cells"]] == [1, 2, 1]
    assert "javascript:" not in page and "data:text/html" not in page
    assert shown["width"] <= 1280
