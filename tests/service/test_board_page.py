"""The board page (service.md §5) against a real uvicorn on 127.0.0.1, read in headless Chromium.

Its leaderboard, intervals, groups, pairs and per-scenario numbers are
those of ``ember rank`` and ``ember stats`` on the board's export; every
record link is a ranked row's record; an open submission shows its
progress; a submission closing reaches an open page by itself (the page
polls); and a request never computes a ranking, a bootstrap or a page.
"""

import asyncio
import gzip
import hashlib
import json
import os

import httpx
import pytest

from helpers.browser import Tab, assert_not_blank
from helpers.service import Service, ember, record_of, wait_for

BOARD = "office"
KEYS = 2  # builtin:office, seeds 0 and 1 (tests/helpers/service.py)
ALPHA_DESCRIPTION = "greedy to the nearest exit <b>not bold</b>"
ALPHA_LINK = "https://example.org/alpha?x=1&y=2"


@pytest.fixture(scope="module")
def board(tmp_path_factory, runs):
    """A served board: alpha, beta and gamma closed (greedy, stay, random); delta open with one key of two."""
    made = Service(str(tmp_path_factory.mktemp("board")), teams=("alpha", "beta", "gamma", "delta", "epsilon"))
    server = made.serve()
    for team in ("alpha", "beta", "gamma"):
        results, policy = runs[team]
        about = ("--description", ALPHA_DESCRIPTION, "--link", ALPHA_LINK) if team == "alpha" else ()
        ember("submit", server.url, BOARD, "--token-file", made.token_file(team), "--policy", policy, *about, results)
    with made.client("delta") as client:
        submission = client.post(f"/api/boards/{BOARD}/submissions", json={"policy": "greedy-v2"}).json()["id"]
        # A record of its own (another team's accepted record would be a copy, 409: service.md §9).
        put = client.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=own_record(0))
        assert put.status_code == 201, put.text
    yield made
    made.close()


def own_record(seed, stream=1_000_003):
    """A random policy's record of builtin:office at ``seed``, its own draws from another stream than gamma's:
    a record no other team of the board submits."""
    import io

    from ember.record.writer import run_episode
    from ember.scenario import compile_scenario
    from ember.sim.policies import make_policy

    scenario = compile_scenario("builtin:office")
    out = io.BytesIO()
    run_episode(scenario, make_policy("random", scenario, seed + stream), seed, out)
    return out.getvalue()


def board_version(url):
    return httpx.get(f"{url}/api/boards/{BOARD}", timeout=30).json()["version"]


def page_version(url):
    return int(httpx.get(f"{url}/boards/{BOARD}", timeout=30).headers["ember-board-version"])


def current_page(url):
    """The board version once the page shows it (the parent derives it off the request path)."""
    return wait_for(lambda: (v := board_version(url)) == page_version(url) and v, what="the page at the board version")


SHOWN = """
(function () {
  function text(node) { return node ? node.textContent.replace(/\\s+/g, " ").trim() : null; }
  function value(cell) {
    // A policy cell: its name (the description, link and date are under it); a folded cell: its pairs.
    var name = cell.querySelector(".name");
    if (name) { return text(name); }
    var pairs = cell.querySelector("dl");
    if (!pairs) { return text(cell); }
    var found = {};
    pairs.querySelectorAll("dt").forEach(function (dt) { found[text(dt)] = text(dt.nextElementSibling); });
    return found;
  }
  function table(selector) {
    var found = document.querySelector(selector);
    if (!found) { return null; }
    var heads = Array.prototype.map.call(found.tHead.rows[0].cells, text);
    return Array.prototype.map.call(found.tBodies[0].rows, function (row) {
      var cells = {};
      heads.forEach(function (head, i) { cells[head] = value(row.cells[i]); });
      return cells;
    });
  }
  var scenarios = Array.prototype.map.call(document.querySelectorAll("#open-scenarios h3"), function (h) {
    return text(h); });
  return {
    version: document.documentElement.getAttribute("data-board-version"),
    ready: document.documentElement.getAttribute("data-ready"),
    label: text(document.querySelector("#open-track .track-label")),
    leaderboard: table("#open-leaderboard table"),
    statisticsPairs: table("#open-statistics table"),
    pairs: table("#open-pairs table"),
    scenarioTables: Array.prototype.map.call(document.querySelectorAll("#open-scenarios table"), function (t, i) {
      t.id = "scenario-table-" + i; return table("#scenario-table-" + i); }),
    scenarios: scenarios,
    records: Array.prototype.map.call(document.querySelectorAll("#open-scenarios a.record"), function (a) {
      return a.getAttribute("href"); }),
    open: table("#open-submissions table"),
    pages: Array.prototype.map.call(document.querySelectorAll("#open-leaderboard td.who"), function (td) {
      var page = td.querySelector("a.name");
      var when = td.querySelector(".when time");
      return [page ? page.getAttribute("href") : null, when ? when.getAttribute("datetime") : null]; }),
    abouts: Array.prototype.map.call(document.querySelectorAll("#open-leaderboard td.who"), function (td) {
      var words = td.querySelector(".about.description"), link = td.querySelector("a.about.link");
      return [words ? words.textContent : null, link ? link.getAttribute("href") : null,
              link ? link.getAttribute("rel") : null]; }),
    width: document.documentElement.scrollWidth,
    facts: Array.prototype.map.call(document.querySelectorAll("#facts span"), text),
    publicSeeds: document.body.textContent.split("public seeds: a policy could").length - 1
  };
})()
"""


def interval_text(part, key="total"):
    low, high = part["interval"]
    return f"{part[key]} [{low}, {high}]"


def test_the_page_shows_the_numbers_of_rank_and_stats_on_the_export(board, browser, tmp_path):
    url = board.server.url
    version = current_page(url)
    export = str(tmp_path / "export")
    ember("service", "export", board.data, BOARD, "-o", export)
    ranking = json.loads(ember("rank", export).stdout)
    statistics = json.loads(ember("stats", export).stdout)
    tab = Tab(browser)
    tab.open(f"{url}/boards/{BOARD}")
    shown = tab.evaluate(SHOWN)
    png = tab.screenshot()
    check = tab.check(shown, png, allowed=(url + "/",))
    tab.close()
    assert check.problems == []
    assert shown["version"] == str(version) and shown["ready"] == "1"
    assert shown["label"] == "public seeds: a policy could have learned its seed from the fire"

    # The leaderboard: order, ranks, rank intervals, groups and totals with their intervals.
    by_name = {entry["policy"]: entry for entry in statistics["policies"]}
    assert [row["policy"] for row in shown["leaderboard"]] == [e["policy"] for e in ranking["ranked"]]
    assert [e["policy"] for e in ranking["ranked"]] == ["alpha.greedy", "gamma.random", "beta.stay"]
    for row, entry in zip(shown["leaderboard"], ranking["ranked"], strict=True):
        stats = by_name[entry["policy"]]
        low, high = stats["rank_interval"]
        assert row["rank"] == str(entry["rank"])
        assert row["rank 95%"] == (str(low) if low == high else f"{low}–{high}")
        assert row["group"] == str(stats["group"])
        for field in ("casualties", "stranded", "evacuated"):
            assert stats[field]["total"] == entry[field]
        assert (row["casualties"], row["stranded"]) == (
            interval_text(stats["casualties"]),
            interval_text(stats["stranded"]),
        )
        assert row["evacuated"] == f"{interval_text(stats['evacuated'])} of {entry['population']}"
        more = row["more"]
        assert more["person-time to safety"] == interval_text(stats["person_time_to_safety_total"])
        assert more["exposure"] == f"{entry['exposure']:.4f}"
        assert more["mean time to safety"] == f"{entry['mean_person_time_to_safety']:.2f}"
        assert more["failed before ok"] == str(entry["failed_before_ok"])

    # The pairs: the statistics' (with their p-values) and the ranking's episode counts.
    assert [(r["above"], r["below"]) for r in shown["statisticsPairs"]] == [
        (p["above"], p["below"]) for p in statistics["pairs"]
    ]
    assert [r["separated"] for r in shown["statisticsPairs"]] == [
        "yes" if p["separated"] else "no" for p in statistics["pairs"]
    ]
    assert [(r["above"], r["below"], r["above better"], r["equal"], r["below better"]) for r in shown["pairs"]] == [
        (p["above"], p["below"], str(p["above_better"]), str(p["equal"]), str(p["below_better"]))
        for p in ranking["pairs"]
    ]

    # Per scenario: the ranking's by_scenario numbers, then each ranked row's record, linked.
    assert shown["scenarios"] == ["office-floor"]
    numbers, records = shown["scenarioTables"]
    for row, entry in zip(numbers, ranking["ranked"], strict=True):
        part = entry["by_scenario"]["office-floor"]
        assert (row["policy"], row["casualties"], row["episodes"]) == (
            entry["policy"], str(part["casualties"]), str(part["episodes"])
        )  # fmt: skip
        cas = by_name[entry["policy"]]["by_scenario"]["office-floor"]["casualties"]["interval"]
        assert row["casualties 95%"] == f"[{cas[0]}, {cas[1]}]"
    with open(os.path.join(export, "episodes.jsonl"), "rb") as handle:
        rows = [json.loads(line) for line in handle]
    assert sorted(shown["records"]) == sorted(f"/api/records/{row['record_sha256']}" for row in rows)
    assert [r["policy"] for r in records] == [e["policy"] for e in ranking["ranked"]]
    for row in rows:
        cells = next(r for r in records if r["policy"] == row["policy"])
        assert cells[f"seed {row['seed']}"] == str(row["metrics"]["safety"]["casualties"])
    link = shown["records"][0]
    fetched = httpx.get(url + link, timeout=30)
    assert fetched.status_code == 200
    assert hashlib.sha256(gzip.decompress(fetched.content)).hexdigest() == link.rsplit("/", 1)[1]

    # Each ranked row links its submission's page and says when it was closed (the board's public listing).
    listing = {f"{s['team']}.{s['policy']}": s for s in httpx.get(f"{url}/api/boards/{BOARD}/submissions").json()}
    assert shown["pages"] == [
        [f"/submissions/{listing[e['policy']]['id']}", listing[e["policy"]]["closed_at"]] for e in ranking["ranked"]
    ]
    # The words and link alpha sent with ``ember submit``: in the listing, and on the page as text and a link.
    assert (listing["alpha.greedy"]["description"], listing["alpha.greedy"]["link"]) == (ALPHA_DESCRIPTION, ALPHA_LINK)
    assert shown["abouts"] == [
        [ALPHA_DESCRIPTION, ALPHA_LINK, "nofollow noopener"] if e["policy"] == "alpha.greedy" else [None, None, None]
        for e in ranking["ranked"]
    ]
    assert shown["width"] <= 1280 and shown["publicSeeds"] == 1
    # The board's counts: teams with a submission (delta's open one too), closed submissions.
    assert shown["facts"] == ["4 teams", "3 submissions"]

    # The open submission and its progress; closed ones are not in that table.
    assert [(r["team"], r["policy"], r["keys done"]) for r in shown["open"]] == [("delta", "greedy-v2", f"1 / {KEYS}")]
    assert_not_blank(png)


INDEX = """
(function () {
  var table = document.querySelector("#boards table");
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (c) { return c.textContent; });
  return {width: document.documentElement.scrollWidth,
          rows: Array.prototype.map.call(table.tBodies[0].rows, function (row) {
            var cells = {};
            heads.forEach(function (head, i) { cells[head] = row.cells[i].textContent.replace(/\\s+/g, " ").trim(); });
            cells.href = row.cells[0].querySelector("a").getAttribute("href");
            return cells; })};
})()
"""


def test_the_index_lists_each_board_to_choose_from(board, browser):
    """``GET /``: per board its page, description and deadline when it has them, its teams (with a
    submission) and closed submissions, its open track's size and its hidden track's state."""
    url = board.server.url
    tab = Tab(browser)
    tab.open(f"{url}/")
    shown = tab.evaluate(INDEX)
    check = tab.check(shown, b"", allowed=(url + "/",))
    tab.close()
    assert check.problems == []
    assert shown["width"] <= 1280
    # alpha, beta and gamma closed; delta open (epsilon has none yet).
    assert shown["rows"] == [
        {"board": BOARD, "href": f"/boards/{BOARD}", "description": "", "closes": "open-ended", "teams": "4",
         "submissions": "3", "open scenarios": f"1 ({KEYS} episodes)", "hidden track": "no hidden track"},
    ]  # fmt: skip


LEADERBOARD_POLICIES = """
(function () {
  var table = document.querySelector("#open-leaderboard table");
  var open = document.querySelector("#open-submissions table");
  return {version: Number(document.documentElement.getAttribute("data-board-version")),
          ranked: table ? Array.prototype.map.call(table.tBodies[0].rows, function (r) {
            return r.cells[3].querySelector(".name").textContent.trim(); }) : [],
          open: open ? Array.prototype.map.call(open.tBodies[0].rows, function (r) {
            return r.cells[0].textContent.trim() + " " + r.cells[2].textContent.trim(); }) : []};
})()
"""


def test_a_submission_closing_reaches_an_open_page_by_itself(board, browser):
    url = board.server.url
    # Records of its own, laid out like a records entry (alpha's would be copies, refused: service.md §9).
    records = os.path.join(board.root, "epsilon-records", "office-floor")
    os.makedirs(records)
    for seed in range(KEYS):
        with open(os.path.join(records, f"{seed}.record"), "wb") as handle:
            handle.write(own_record(seed, stream=2_000_029))
    policy = "greedy"
    source = os.path.dirname(records)
    ember("submit", url, BOARD, "--token-file", board.token_file("epsilon"), "--policy", policy, source, "--no-close")
    current_page(url)
    tab = Tab(browser)
    tab.open(f"{url}/boards/{BOARD}")
    before = tab.evaluate(LEADERBOARD_POLICIES)
    assert f"epsilon {KEYS} / {KEYS}" in before["open"] and "epsilon.greedy" not in before["ranked"]
    with board.client("epsilon") as client:
        listing = client.get(f"/api/boards/{BOARD}/submissions").json()
        mine = next(s["id"] for s in listing if s["team"] == "epsilon")
        assert client.post(f"/api/submissions/{mine}/close").status_code == 200
    # Nobody touches the tab: its own polling must bring the new page.
    shown = LEADERBOARD_POLICIES.strip()
    script = f"(function () {{ var s = {shown}; return s.ranked.indexOf('epsilon.greedy') >= 0 && s; }})()"
    after = tab.wait_until(script, "epsilon.greedy on the open page's leaderboard")
    check = tab.check(after, b"", allowed=(url + "/",))
    tab.close()
    assert after["version"] > before["version"]
    assert not any(line.startswith("epsilon ") for line in after["open"])
    assert check.problems == []


def _page_file(data):
    folder = os.path.join(data, "derived", BOARD)
    pages = sorted(name for name in os.listdir(folder) if name.startswith("page-"))
    path = os.path.join(folder, max(pages, key=lambda name: int(name[5:-5])))
    info = os.stat(path)
    return path, info.st_ino, info.st_mtime_ns


COMPUTING = (
    ("ember.service.derived", "export_board"),
    ("ember.service.pages", "board_page"),
    ("ember.service.pages", "write_page"),
    ("ember.stats", "statistics_of_directory"),
    ("ember.stats", "statistics_of"),
    ("ember.ranking", "ranking_of"),
)


def test_anonymous_requests_never_compute(board, monkeypatch):
    """Many anonymous GETs of the page, the index and the derived files: no ranking, bootstrap or page is
    computed (each counted in this process), and the page file the real server serves is never rewritten."""
    import importlib

    url = board.server.url
    current_page(url)
    # The page is made again once the board's bounds exist (bounds.md §5); from then on it is final.
    wait_for(lambda: "evacuated of possible" in httpx.get(f"{url}/boards/{BOARD}", timeout=30).text, what="bounds")
    calls = []
    for module, name in COMPUTING:
        target = importlib.import_module(module)
        original = getattr(target, name)
        monkeypatch.setattr(
            target, name, lambda *a, _name=name, _original=original, **k: calls.append(_name) or _original(*a, **k)
        )
    from ember.service.app import create_app

    before = _page_file(board.data)
    with open(before[0], "rb") as handle:
        written = handle.read()
    paths = ("/", f"/boards/{BOARD}", f"/api/boards/{BOARD}", f"/api/boards/{BOARD}/ranking.json",
             f"/api/boards/{BOARD}/statistics.json")  # fmt: skip

    async def in_process():
        transport = httpx.ASGITransport(app=create_app(board.data))
        async with httpx.AsyncClient(transport=transport, base_url="http://board.test") as local:
            for _ in range(20):
                for path in paths:
                    assert (await local.get(path)).status_code == 200
                    assert httpx.get(url + path, timeout=30).status_code == 200
            return (await local.get(f"/boards/{BOARD}")).content

    assert asyncio.run(in_process()) == written
    assert httpx.get(f"{url}/boards/{BOARD}", timeout=30).content == written
    assert calls == []
    assert _page_file(board.data) == before


def test_open_progress_on_both_backends(service, runs):
    """The page's progress query (rows up to the page's version, per open submission) on SQLite and PostgreSQL."""
    server = service.serve()
    with service.client("alpha") as client:
        submission = client.post(f"/api/boards/{BOARD}/submissions", json={"policy": "greedy"}).json()["id"]
        put = client.put(
            f"/api/submissions/{submission}/episodes/office-floor/1", content=record_of(runs["alpha"][0], "greedy", 1)
        )
        assert put.status_code == 201, put.text
    current_page(server.url)
    page = httpx.get(f"{server.url}/boards/{BOARD}", timeout=30).text
    assert f'<td class="text">alpha</td><td class="text">greedy</td><td data-sort="1">1 / {KEYS}</td>' in page
    assert "No submission is ranked on this track yet." in page


HIDDEN_SHOWN = """
(function () {
  var track = document.querySelector("#hidden-leaderboard table");
  return {kinds: track ? Array.prototype.map.call(track.tBodies[0].rows, function (r) {
            return r.cells[4].textContent; }) : null,
          names: track ? Array.prototype.map.call(track.tBodies[0].rows, function (r) {
            return r.cells[3].querySelector(".name").textContent; }) : null,
          figures: document.querySelectorAll("#hidden-plots figure svg").length,
          plotsNote: document.querySelector("#hidden-plots p") ? document.querySelector("#hidden-plots p").textContent
            : null,
          width: document.documentElement.scrollWidth};
})()
"""


def test_a_hidden_track_calls_its_policies_bundles_and_is_plotted_only_after_the_reveal(browser, tmp_path):
    from helpers.bundles import python_bundle
    from helpers.hidden import HiddenService, wait_served

    hidden = HiddenService(hidden_seeds=2, teams=("alpha",))
    try:
        server = hidden.serve()
        job = hidden.submit("alpha", python_bundle(str(tmp_path / "walker.tar.gz")))
        assert hidden.wait_job("alpha", job)["state"] == "done"
        shown = []
        for reveal in (False, True):
            if reveal:
                ember("service", "board", "reveal", hidden.data, "office")
            version = board_version(server.url)
            wait_served(server, "/boards/office", version=version)
            tab = Tab(browser)
            tab.open(f"{server.url}/boards/office")
            shown.append(tab.evaluate(HIDDEN_SHOWN))
            tab.open(f"{server.url}/")
            shown[-1]["index"] = tab.evaluate(INDEX)["rows"][0]["hidden track"]
            problems = tab.check(None, b"", allowed=(server.url + "/",)).problems
            tab.close()
            assert problems == []
    finally:
        hidden.close()
    before, after = shown
    for seen in shown:
        assert seen["names"] == ["alpha.walker"] and seen["kinds"] == ["bundle"] and seen["width"] <= 1280
    # Before the reveal the plots would show each secret seed's outcome: none is drawn.
    assert (before["index"], after["index"]) == ("secret", "revealed")
    assert before["figures"] == 0 and before["plotsNote"].startswith(
        "This track is plotted once its seeds are revealed"
    )
    assert after["figures"] == 4
