"""The hidden track's two key sets (service.md §9): live keys give the feedback, final keys nothing before the
reveal.  Real ``ember service`` commands, a real server killed mid-reveal, real jobs.

A board's hidden file gives builtin:office one live and two final seeds
and builtin:small-room one final seed only.  The team's job runs on the
one live key; the live ranking is served, nothing final is.  ``board
reveal`` closes the board, runs the ranked bundle on the three final keys
as a leased job (the server is SIGKILLed in the middle and resumes it),
and only then publishes keys, salt and the final rows' log entries at
once.  Until then no answer, page or log entry names a final seed or any
number of a final episode; after it the live and final exports pass
``ember verify --log`` and rank to the bytes served.
"""

import hashlib
import json
import os

import httpx
import pytest

from ember.service.registry import commitment_of

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService, wait_served
from helpers.service import ember, wait_for

SETS_CAMPAIGN = """campaign = "hidden"
scenarios = [
  { source = "builtin:office", seeds = { live = 1, final = 2 } },
  { source = "builtin:small-room", seeds = { live = 0, final = 1 } },
]
"""

#: The walker of helpers/bundles.py, slowed where it makes its policy: the final job lasts seconds.
SLOW_POLICY = """
import time


def make_policy(scenario):
    time.sleep(3)

    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}

    return policy
"""


@pytest.fixture
def hidden():
    made = HiddenService(teams=("alpha",), hidden_text=SETS_CAMPAIGN)
    yield made
    made.close()


def readable(hidden, job_ids):
    """Everything anyone (and team alpha, about its jobs) can read of the board: {path: (status, text)}."""
    base = "/api/boards/office"
    paths = [
        "/", "/boards/office", base, f"{base}/log", f"{base}/submissions",
        *(f"{base}/hidden/{s}{f}" for s in ("", "live/", "final/")
          for f in ("ranking.json", "statistics.json", "episodes.jsonl")),
        *(f"/api/jobs/{job}" for job in job_ids),
    ]  # fmt: skip
    with hidden.client("alpha") as client:
        return {path: (answer.status_code, answer.text) for path in paths for answer in [client.get(path)]}


def test_live_keys_give_the_feedback_and_final_keys_nothing_until_the_reveal(hidden):
    assert "warning" not in hidden.board_added.stderr
    secret = hidden.secret()
    keys = secret["keys"]
    # L + F distinct seeds per scenario, tagged; the first L (ascending) live; the commitment over them sorted.
    assert keys == sorted(keys, key=lambda key: (key[0], key[1], key[2]))
    by_scenario = {}
    for scenario_id, _, seed, chosen in keys:
        by_scenario.setdefault(scenario_id, []).append((seed, chosen))
    assert {name: [c for _, c in found] for name, found in by_scenario.items()} == {
        "office-floor": ["live", "final", "final"],
        "small-room": ["final"],
    }
    assert len({seed for _, _, seed, _ in keys}) == 4
    server = hidden.serve()
    board = httpx.get(f"{server.url}/api/boards/office").json()
    assert [s["seeds"] for s in board["hidden"]["scenarios"]] == [{"live": 1, "final": 2}, {"live": 0, "final": 1}]
    assert board["hidden"]["commitment"] == commitment_of(keys, secret["salt"])
    (live_seed,) = [seed for _, _, seed, chosen in keys if chosen == "live"]
    final_seeds = [seed for _, _, seed, chosen in keys if chosen == "final"]

    bundle = python_bundle(os.path.join(hidden.root, "slow.tar.gz"), policy=SLOW_POLICY)
    live_job = hidden.submit("alpha", bundle)
    status = hidden.wait_job("alpha", live_job)
    # The job ran on the live key only and counts it only; the scenario without live keys is left out.
    assert (status["state"], status["done"], status["total"], status["failures"]) == ("done", 1, 1, []), status
    assert [s["scenario_id"] for s in status["scenarios"]] == ["office-floor"]
    ((seed,),) = hidden.database_rows("SELECT seed FROM hidden_rows WHERE job_id = :job", job=live_job)
    assert seed == live_seed
    version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
    live_ranking = wait_served(server, "/api/boards/office/hidden/live/ranking.json", version=version)
    assert [entry["policy"] for entry in live_ranking.json()["ranked"]] == ["alpha.walker"]
    wait_served(server, "/boards/office", version=version)
    before = readable(hidden, [live_job])
    base = "/api/boards/office/hidden"
    assert {path: code for path, (code, _) in before.items() if path.startswith(base)} == {
        f"{base}/ranking.json": 404, f"{base}/statistics.json": 404, f"{base}/episodes.jsonl": 404,
        f"{base}/live/ranking.json": 200, f"{base}/live/statistics.json": 200, f"{base}/live/episodes.jsonl": 404,
        f"{base}/final/ranking.json": 404, f"{base}/final/statistics.json": 404, f"{base}/final/episodes.jsonl": 404,
    }  # fmt: skip
    page = before["/boards/office"][1]
    assert "Live track" in page and "Final track" not in page
    log = [json.loads(line) for line in before["/api/boards/office/log"][1].splitlines()]
    assert [e["data"] for e in log if e["event"] == "hidden_row"] == [{"job": live_job, "set": "live"}]

    # The reveal begins: the board takes no bundle, the ranked bundle runs on the final keys as a leased job.
    begun = ember("service", "board", "reveal", hidden.data, "office")
    assert "the reveal has begun" in begun.stderr and "0 of 1 final jobs done" in begun.stderr, begun.stderr
    with hidden.client("alpha") as client, open(bundle, "rb") as handle:
        refused = client.post("/api/boards/office/agents", content=handle.read())
    assert refused.status_code == 409 and "being revealed" in refused.json()["error"]
    ((final_job,),) = hidden.database_rows("SELECT id FROM jobs WHERE key_set = 'final'")
    wait_for(
        lambda: hidden.database_rows("SELECT count(*) FROM hidden_rows WHERE job_id = :job", job=final_job)[0][0] >= 1,
        timeout=120, what="a first final row",
    )  # fmt: skip
    during = readable(hidden, [live_job, final_job])
    query = "SELECT row FROM hidden_rows WHERE job_id = :job"
    final_rows = [json.loads(bytes(row)) for (row,) in hidden.database_rows(query, job=final_job)]
    numbers = [str(seed) for seed in final_seeds] + [repr(row["elapsed_s"]) for row in final_rows] + [final_job]
    leaks = {path: [n for n in numbers if n in text] for path, (_, text) in during.items()}
    assert {path: found for path, found in leaks.items() if found} == {}
    assert during[f"/api/jobs/{final_job}"][0] == 404
    assert during[f"/api/jobs/{live_job}"] == before[f"/api/jobs/{live_job}"]
    assert during["/api/boards/office/log"] == before["/api/boards/office/log"]  # not one entry more
    assert json.loads(during["/api/boards/office"][1])["hidden"]["revealed"] is None

    # A killed server resumes the final job; the reveal completes once it is done.
    server.kill()
    server = hidden.serve()
    wait_for(
        lambda: httpx.get(f"{server.url}/api/boards/office").json()["hidden"]["revealed"] is not None,
        timeout=300, what="the reveal",
    )  # fmt: skip
    board = httpx.get(f"{server.url}/api/boards/office").json()
    assert board["hidden"]["revealed"] == secret
    log = [json.loads(line) for line in httpx.get(f"{server.url}/api/boards/office/log").text.splitlines()]
    assert log[-1]["event"] == "reveal"
    held = [e for e in log if e["event"] == "hidden_row" and e["data"]["set"] == "final"]
    assert [e["data"] for e in held] == [{"job": final_job, "set": "final"}] * 3
    assert [e["seq"] for e in held] == list(range(log[-1]["seq"] - 3, log[-1]["seq"]))  # published at once
    status = hidden.job("alpha", final_job).json()
    assert (status["state"], status["done"], status["total"]) == ("done", 3, 3), status
    final_episodes = wait_served(server, f"{base}/final/episodes.jsonl", version=board["version"])
    rows = [json.loads(line) for line in final_episodes.content.splitlines()]
    assert sorted(row["seed"] for row in rows) == sorted(final_seeds)  # each final episode once
    assert sorted(hashlib.sha256(line).hexdigest() for line in final_episodes.content.splitlines()) == sorted(
        e["row_sha256"] for e in held
    )
    final_ranking = wait_served(server, f"{base}/final/ranking.json", version=board["version"])
    assert httpx.get(f"{server.url}{base}/ranking.json").content == final_ranking.content  # 1.0 path: final
    assert httpx.get(f"{server.url}{base}/hidden/ranking.json").status_code == 404  # a set is live or final
    live_episodes = wait_served(server, f"{base}/live/episodes.jsonl", version=board["version"])
    assert [json.loads(line)["seed"] for line in live_episodes.content.splitlines()] == [live_seed]
    page = wait_served(server, "/boards/office", version=board["version"]).text
    assert "Final track" in page and "Live track" in page

    for track, ranking in (("live", None), ("final", final_ranking.content), ("hidden", final_ranking.content)):
        export = os.path.join(hidden.root, f"export-{track}")
        ember("service", "export", hidden.data, "office", "-o", export, "--track", track)
        logged = ember("verify", export, "--log", os.path.join(export, "log.jsonl"), check=False)
        assert logged.returncode == 0 and "the log holds" in logged.stdout, (track, logged.stdout + logged.stderr)
        served = ranking or httpx.get(f"{server.url}{base}/live/ranking.json").content
        assert ember("rank", export).stdout.encode() == served, track
        with open(os.path.join(export, "campaign.json"), encoding="utf-8") as handle:
            scenarios = json.load(handle)["scenarios"]
        expected = [("office-floor", [live_seed])] if track == "live" else None
        if expected is not None:
            assert [(s["scenario_id"], s["seeds"]) for s in scenarios] == expected  # L = 0 left out
        else:
            assert sorted(seed for s in scenarios for seed in s["seeds"]) == sorted(final_seeds)


def test_the_1_0_seed_forms_make_live_keys_only_and_board_add_warns(hidden):
    folder = hidden.root
    old = hidden.write("old.toml", 'campaign = "h"\nseeds = [5, 6]\nscenarios = ["builtin:office"]\n')
    added = ember("service", "board", "add", hidden.data, "old", "--campaign", os.path.join(folder, "old.toml"),
                  "--hidden", old)  # fmt: skip
    assert "warning: hidden scenarios office-floor: seeds in a 1.0 form are all live keys" in added.stderr
    assert added.stdout == ""
    ((data,),) = hidden.database_rows("SELECT hidden_secret FROM boards WHERE name = 'old'")
    assert [len(key) for key in json.loads(bytes(data))["keys"]] == [3, 3]  # untagged, as under 1.0
    shown = json.loads(bytes(hidden.database_rows("SELECT hidden FROM boards WHERE name = 'old'")[0][0]))
    assert shown["scenarios"][0]["seeds"] == 2
    bad = hidden.write(
        "bad.toml", 'campaign = "h"\nscenarios = [{ source = "builtin:office", seeds = { live = 0, final = 0 } }]\n'
    )
    refused = ember("service", "board", "add", hidden.data, "bad", "--campaign", old, "--hidden", bad, check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().endswith("expected live + final >= 1, got live = 0 and final = 0")
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_board_without_live_keys_gives_no_feedback_and_ranks_at_the_reveal(tmp_path):
    made = HiddenService(
        teams=("alpha",),
        hidden_text='campaign = "h"\nscenarios = [{ source = "builtin:office", seeds = { live = 0, final = 1 } }]\n',
    )
    try:
        server = made.serve()
        job = made.submit("alpha", python_bundle(os.path.join(made.root, "p.tar.gz")))
        status = made.wait_job("alpha", job)
        # No live key: nothing runs, nothing is counted, the live files are 404.
        assert (status["state"], status["done"], status["total"], status["scenarios"]) == ("done", 0, 0, []), status
        for name in ("ranking.json", "statistics.json", "episodes.jsonl"):
            answer = httpx.get(f"{server.url}/api/boards/office/hidden/live/{name}")
            assert answer.status_code == 404 and "no live key" in answer.json()["error"], answer.text
        ember("service", "board", "reveal", made.data, "office")
        wait_for(
            lambda: httpx.get(f"{server.url}/api/boards/office").json()["hidden"]["revealed"] is not None,
            timeout=300, what="the reveal",
        )  # fmt: skip
        version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
        ranking = wait_served(server, "/api/boards/office/hidden/final/ranking.json", version=version)
        assert [entry["policy"] for entry in ranking.json()["ranked"]] == ["alpha.walker"]
    finally:
        made.close()
