"""The hidden track end to end (service.md §3, §6): real servers, real jobs, the reveal and the commitment.

Two teams send bundles (a python policy and an agent) with ``ember submit
--agent``; the ``serve`` parent evaluates them on the board's secret seeds;
before the reveal nothing served names a seed or a hidden record; after
it the rows and records are served, each row matches its log entry, the
commitment checks, and the export passes ``ember verify`` and ``--log``.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

import httpx
import pytest

from ember.service.boards import load_board
from ember.service.errors import ServiceRefusal
from ember.service.hidden import jobs
from ember.service.hidden.bundles import check_bundle
from ember.service.hidden.secrecy import check_board_commitment
from ember.service.registry import open_service, team_of_token

from helpers.browser import Tab
from helpers.bundles import agent_bundle, python_bundle
from helpers.hidden import HiddenService, rerun_locally, wait_served, without_elapsed
from helpers.service import ember, wait_for

JOB_KEYS = {"id", "state", "done", "total", "scenarios", "failures"}  # before the reveal: no stderr_tail


@pytest.fixture
def hidden():
    made = HiddenService(hidden_seeds=2, teams=("alpha", "beta"), limits={"jobs_per_day": 2})
    yield made
    made.close()


@pytest.fixture
def hidden_on(database):
    """The same on SQLite and on PostgreSQL (the ``database`` fixture)."""
    made = HiddenService(hidden_seeds=2, teams=("alpha", "beta"), database=database)
    yield made
    made.close()


def seeds_in(text, keys):
    return [seed for _, _, seed in keys if str(seed) in text]


HIDDEN_SHOWN = """
(function () {
  function text(node) { return node ? node.textContent.replace(/\\s+/g, " ").trim() : null; }
  var table = document.querySelector("#hidden-leaderboard table");
  var heads = table ? Array.prototype.map.call(table.tHead.rows[0].cells, text) : [];
  return {
    version: Number(document.documentElement.getAttribute("data-board-version")),
    tracks: Array.prototype.map.call(document.querySelectorAll("section.track h2"), text),
    label: text(document.querySelector("#hidden-track .track-label")),
    leaderboard: table ? Array.prototype.map.call(table.tBodies[0].rows, function (row) {
      var cells = {};
      heads.forEach(function (head, i) { cells[head] = text(row.cells[i]); });
      return cells;
    }) : null,
    publicSeedsWarning: !!document.querySelector("#hidden-leaderboard .warning#public-seeds"),
    records: Array.prototype.map.call(document.querySelectorAll("#hidden-scenarios a.record"), function (a) {
      return a.getAttribute("href"); }),
    html: document.documentElement.outerHTML
  };
})()
"""


def hidden_page(browser, server, version):
    """What headless Chromium shows of the hidden track on the board page of ``version`` (or later)."""
    url = f"{server.url}/boards/office"
    wait_for(lambda: int(httpx.get(url).headers["ember-board-version"]) >= version, what="the page at the version")
    tab = Tab(browser)
    tab.open(url)
    shown = tab.evaluate(HIDDEN_SHOWN)
    check = tab.check(shown, b"", allowed=(server.url + "/",))
    tab.close()
    assert check.problems == []
    return shown


def interval_text(part):
    low, high = part["interval"]
    return f"{part['total']} [{low}, {high}]"


def test_two_bundles_evaluated_secret_until_the_reveal_then_checked_and_exported(hidden_on, browser):
    hidden = hidden_on
    server = hidden.serve(workers=2)
    python_job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "p.tar.gz")))
    agent_job = hidden.submit("beta", agent_bundle(os.path.join(hidden.root, "a.tar.gz")))
    done = {job: hidden.wait_job(team, job) for team, job in (("alpha", python_job), ("beta", agent_job))}
    keys = hidden.secret()["keys"]
    for status in done.values():
        assert set(status) == JOB_KEYS
        assert (status["state"], status["done"], status["total"], status["failures"]) == ("done", 2, 2, []), status
        assert [s["scenario_id"] for s in status["scenarios"]] == ["office-floor"]
        assert status["scenarios"][0]["episodes"] == 2
        assert type(status["scenarios"][0]["casualties"]) is int
    # Another team's job is 403; the job's own JSON names no seed.
    with hidden.client("beta") as beta:
        assert beta.get(f"/api/jobs/{python_job}").status_code == 403
    # Exactly one process ran the jobs: the serve parent (its pid is in the lease's owner).
    owners = {owner for (owner,) in hidden.database_rows("SELECT owner FROM jobs")}
    assert {owner.split(":")[1] for owner in owners} == {str(server.process.pid)}

    # Before the reveal: nothing served names a hidden seed or gives a hidden row or record.
    board = httpx.get(f"{server.url}/api/boards/office").json()
    assert board["hidden"]["revealed"] is None
    assert board["hidden"]["scenarios"][0]["seeds"] == 2
    hidden_ranking = wait_served(server, "/api/boards/office/hidden/ranking.json", version=board["version"])
    served = [
        json.dumps(board),
        httpx.get(f"{server.url}/api/boards/office/log").text,
        hidden_ranking.text,
        httpx.get(f"{server.url}/api/boards/office/hidden/statistics.json").text,
        *(hidden.job(team, job).text for team, job in (("alpha", python_job), ("beta", agent_job))),
    ]
    assert [seeds_in(text, keys) for text in served] == [[]] * len(served)
    assert httpx.get(f"{server.url}/api/boards/office/hidden/episodes.jsonl").status_code == 404
    names = sorted(entry["policy"] for entry in hidden_ranking.json()["ranked"])
    assert names == ["alpha.walker", "beta.runner"]
    stored = hidden.database_rows("SELECT record_sha256 FROM hidden_rows")
    assert len(stored) == 4
    assert all(httpx.get(f"{server.url}/api/records/{h}").status_code == 404 for (h,) in stored)
    # The board page's hidden leaderboard: the served ranking's order and statistics, no seed, no record.
    page = hidden_page(browser, server, board["version"])
    assert page["tracks"] == ["Open track", "Hidden track"]
    assert page["label"].startswith("secret seeds") and not page["publicSeedsWarning"]
    hidden_statistics = httpx.get(f"{server.url}/api/boards/office/hidden/statistics.json").json()
    by_name = {entry["policy"]: entry for entry in hidden_statistics["policies"]}
    assert [row["policy"] for row in page["leaderboard"]] == [e["policy"] for e in hidden_ranking.json()["ranked"]]
    for row in page["leaderboard"]:
        assert row["casualties"] == interval_text(by_name[row["policy"]]["casualties"])
    assert page["records"] == [] and seeds_in(page["html"], keys) == []
    assert not any(h in page["html"] for (h,) in stored)
    assert ember("service", "check-commitment", server.url, "office", check=False).returncode == 2

    # The reveal: keys and salt published, rows and records served, new bundles refused.
    ember("service", "board", "reveal", hidden.data, "office")
    board = httpx.get(f"{server.url}/api/boards/office").json()
    assert board["hidden"]["revealed"] == hidden.secret()
    log = [json.loads(line) for line in httpx.get(f"{server.url}/api/boards/office/log").text.splitlines()]
    assert log[-1]["event"] == "reveal" and log[-1]["data"] == hidden.secret()
    entries = [entry for entry in log if entry["event"] == "hidden_row"]
    assert len(entries) == 4 and all(entry["row"] is None for entry in entries)
    episodes = wait_served(server, "/api/boards/office/hidden/episodes.jsonl", version=board["version"])
    lines = episodes.content.splitlines()
    assert sorted(hashlib.sha256(line).hexdigest() for line in lines) == sorted(e["row_sha256"] for e in entries)
    rows = [json.loads(line) for line in lines]
    assert sorted((row["policy"], row["seed"]) for row in rows) == sorted(
        (policy, key[2]) for policy in ("alpha.walker", "beta.runner") for key in keys
    )
    for (h,) in stored:
        record = httpx.get(f"{server.url}/api/records/{h}")
        assert record.status_code == 200 and record.headers["content-type"] == "application/octet-stream"
    with hidden.client("beta") as beta:
        assert beta.post("/api/boards/office/agents", content=b"\x1f\x8b").status_code == 409
    page = hidden_page(browser, server, board["version"])
    assert sorted(page["records"]) == sorted(f"/api/records/{h}" for (h,) in stored)
    checked = ember("service", "check-commitment", server.url, "office", check=False)
    assert checked.returncode == 0 and "holds" in checked.stdout, checked.stdout + checked.stderr

    # The export of the hidden track: verify and verify --log pass; rank gives the served bytes.
    export = os.path.join(hidden.root, "export")
    ember("service", "export", hidden.data, "office", "-o", export, "--track", "hidden")
    logged = ember("verify", export, "--log", os.path.join(export, "log.jsonl"), check=False)
    assert logged.returncode == 0 and "the log holds" in logged.stdout, logged.stdout + logged.stderr
    ranking = wait_served(server, "/api/boards/office/hidden/ranking.json", version=board["version"])
    assert ember("rank", export).stdout.encode() == ranking.content
    with open(os.path.join(export, "episodes.jsonl"), "rb") as handle:
        assert handle.read() == episodes.content

    # The same episodes run by anyone on the revealed seeds give the same rows (but the wall time).
    again = rerun_locally(hidden, keys, python_bundle(os.path.join(hidden.root, "p2.tar.gz")), "alpha.walker")
    assert sorted(map(json.dumps, again)) == sorted(
        json.dumps(without_elapsed(row)) for row in rows if row["policy"] == "alpha.walker"
    )
    # Every record of the export is re-authenticated (records found relative to the export, campaign.md §6).
    verified = ember("verify", export, check=False)
    assert verified.returncode == 0 and "4 verified, 0 mismatched, 0 unverifiable" in verified.stdout, verified.stdout


def test_the_commitment_is_refused_when_one_key_is_changed(hidden):
    server = hidden.serve()
    ember("service", "board", "reveal", hidden.data, "office")
    board = httpx.get(f"{server.url}/api/boards/office").json()
    first = json.loads(httpx.get(f"{server.url}/api/boards/office/log", params={"limit": 1}).text)
    assert check_board_commitment(board, first).holds
    assert run_script(server.url).returncode == 0
    for change in ("seed", "scenario_hash", "salt"):
        changed = json.loads(json.dumps(board))
        secret = changed["hidden"]["revealed"]
        if change == "seed":
            secret["keys"][0][2] = secret["keys"][0][2] ^ 1
        elif change == "scenario_hash":
            secret["keys"][0][1] = "sha256:" + "0" * 64
        else:
            secret["salt"] = "0" * 64
        found = check_board_commitment(changed, first)
        assert not found.holds and "hash to" in found.problems[0], found.problems
    # Through the command: the service now publishes a changed key, and check-commitment exits 1.
    revealed = board["hidden"]
    revealed["revealed"]["keys"][0][2] ^= 1
    revealed.pop("version", None)
    changed = json.dumps(revealed, sort_keys=True, separators=(",", ":")).encode()
    hidden.database_rows("UPDATE boards SET hidden = :hidden WHERE name = 'office'", hidden=changed)
    refused = ember("service", "check-commitment", server.url, "office", check=False)
    assert refused.returncode == 1 and "does NOT hold" in refused.stdout, refused.stdout
    assert re.search(r"hash to [0-9a-f]{64}, the board published", refused.stdout)
    script = run_script(server.url)
    assert script.returncode == 1 and "does NOT hold" in script.stdout, script.stdout + script.stderr


def run_script(url):
    """scripts/check_commitment.py (standard library only) against board ``office``."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_commitment.py")
    return subprocess.run([sys.executable, path, url, "office"], capture_output=True, text=True, timeout=120)


def test_reveal_waits_for_the_jobs_one_job_per_team_and_the_day_count(hidden):
    """Jobs made without a server (so none starts): 429 while one is queued, 429 past the day's count, the
    reveal refused while one is queued."""
    config, db = open_service(hidden.data)
    try:
        with db.transaction(read=True) as connection:
            board = load_board(connection, "office")
            team = team_of_token(connection, hidden.tokens["alpha"])

        def send():
            path = python_bundle(os.path.join(hidden.root, "p.tar.gz"))
            manifest, _ = check_bundle(path, "alpha", config.board_limits("office"))
            return jobs.create(config, db, board, team, path, manifest)

        first = send()
        with pytest.raises(ServiceRefusal) as busy:
            send()
        assert (busy.value.status, busy.value.extra) == (429, {"id": first})
        refused = ember("service", "board", "reveal", hidden.data, "office", check=False)
        assert refused.returncode == 2 and f"job {first} is queued or running" in refused.stderr
        hidden.database_rows("UPDATE jobs SET state = 'done'")
        send()
        hidden.database_rows("UPDATE jobs SET state = 'done'")
        with pytest.raises(ServiceRefusal) as day:
            send()
        assert day.value.status == 429 and "sent 2 bundles to this board today" in str(day.value)
        assert sorted(os.listdir(os.path.join(hidden.data, "bundles"))) == sorted(
            [f"{job}.tar.gz" for (job,) in hidden.database_rows("SELECT id FROM jobs")]
        )  # a refused bundle leaves no file
    finally:
        db.dispose()


def test_a_job_made_before_bundles_were_kept_apart_keeps_its_bundle_when_its_folder_goes(hidden):
    """A 1.0 job's bundle sat in its folder: removing the folder moves it to DATA/bundles/ for the reveal."""
    config, db = open_service(hidden.data)
    try:
        with db.transaction(read=True) as connection:
            board = load_board(connection, "office")
            team = team_of_token(connection, hidden.tokens["alpha"])
        path = python_bundle(os.path.join(hidden.root, "p.tar.gz"))
        manifest, _ = check_bundle(path, "alpha", config.board_limits("office"))
        job = jobs.create(config, db, board, team, path, manifest)
        old = os.path.join("jobs", job, "bundle.tar.gz")
        os.makedirs(os.path.join(hidden.data, "jobs", job))
        os.replace(jobs.bundle_path(config, job), os.path.join(hidden.data, old))
        hidden.database_rows("UPDATE jobs SET bundle = :old, state = 'done'", old=old)
        with open(os.path.join(hidden.data, old), "rb") as handle:
            sent = handle.read()
        jobs.remove_folder(config, db, job)
        assert not os.path.exists(os.path.join(hidden.data, "jobs", job))
        (kept,) = hidden.database_rows("SELECT bundle FROM jobs WHERE id = :job", job=job)[0]
        assert kept == os.path.join("bundles", f"{job}.tar.gz")
        with open(os.path.join(hidden.data, kept), "rb") as handle:
            assert handle.read() == sent
    finally:
        db.dispose()
