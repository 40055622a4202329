"""The service end to end (service.md §3, §4, §7): three teams submit with ``ember submit``; what the API serves
is byte for byte what ``ember rank``, ``ember stats`` and the export give; the export verifies, log included."""

import gzip
import hashlib
import json
import os

import httpx

from helpers.service import ember, record_of, wait_for


def derived(service, name, version):
    """The API's ``name`` once it is derived from board version ``version``."""

    def ready():
        response = httpx.get(f"{service.server.url}/api/boards/office/{name}", timeout=30)
        if response.status_code == 200 and response.headers["ember-board-version"] == str(version):
            return response
        return None

    return wait_for(ready, what=f"{name} at version {version}")


def test_three_teams_get_the_numbers_of_rank_and_stats_on_the_export(service, runs, tmp_path):
    server = service.serve()
    for team, (results, policy) in runs.items():
        done = ember("submit", server.url, "office", "--token-file", service.token_file(team), "--policy", policy,
                     results, "--jobs", "2")  # fmt: skip
        assert done.stdout.startswith("ember submit: submission ") and " is closed: 2 uploaded now" in done.stdout
    # A second policy of gamma's, closed and then withdrawn: off the board, its log entries stay.
    gamma_results, _ = runs["gamma"]
    extra = os.path.join(str(tmp_path), "gamma-copy")
    os.makedirs(os.path.join(extra, "office-floor"))
    for seed in (0, 1):
        with open(os.path.join(extra, "office-floor", f"{seed}.record.gz"), "wb") as handle:
            handle.write(record_of(gamma_results, "random", seed))
    done = ember("submit", server.url, "office", "--token-file", service.token_file("gamma"), "--policy", "again",
                 extra)  # fmt: skip
    submission = done.stdout.split()[3]
    with service.client("gamma") as gamma:
        assert gamma.post(f"/api/submissions/{submission}/withdraw").status_code == 200
    board = httpx.get(f"{server.url}/api/boards/office").json()
    # board + 4 submissions x (2 rows + close) + 1 withdraw
    assert board["version"] == 1 + 4 * 3 + 1
    ranking = derived(service, "ranking.json", board["version"])
    statistics = derived(service, "statistics.json", board["version"])
    episodes = derived(service, "episodes.jsonl", board["version"])
    assert ranking.headers["access-control-allow-origin"] == "*"
    export = os.path.join(str(tmp_path), "export")
    ember("service", "export", service.data, "office", "-o", export)
    assert ember("rank", export).stdout.encode() == ranking.content
    assert ember("stats", export).stdout.encode() == statistics.content
    with open(os.path.join(export, "episodes.jsonl"), "rb") as handle:
        assert handle.read() == episodes.content
    names = [entry["policy"] for entry in json.loads(ranking.content)["ranked"]]
    assert sorted(names) == ["alpha.greedy", "beta.stay", "gamma.random"]  # the withdrawn one is off the board
    verified = ember("verify", export, check=False)
    assert verified.returncode == 0 and "6 verified, 0 mismatched, 0 unverifiable" in verified.stdout, verified.stdout
    logged = ember("verify", export, "--log", os.path.join(export, "log.jsonl"), check=False)
    assert logged.returncode == 0 and "the log holds" in logged.stdout, logged.stdout
    # The ETag is the SHA-256 of the bytes; a conditional GET is answered 304.
    assert ranking.headers["etag"] == f'"{hashlib.sha256(ranking.content).hexdigest()}"'
    again = httpx.get(
        f"{server.url}/api/boards/office/ranking.json", headers={"If-None-Match": ranking.headers["etag"]}
    )
    assert again.status_code == 304
    # The API's log is the export's log.
    log = httpx.get(f"{server.url}/api/boards/office/log").content
    with open(os.path.join(export, "log.jsonl"), "rb") as handle:
        assert handle.read() == log
    assert (
        httpx.get(f"{server.url}/api/boards/office/log", params={"after": 13, "limit": 1}).content
        == (log.splitlines(keepends=True)[13])
    )


def test_a_tampered_log_or_directory_fails_verify_log(service, runs, tmp_path):
    server = service.serve()
    results, policy = runs["alpha"]
    ember("submit", server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy, results)
    export = os.path.join(str(tmp_path), "export")
    ember("service", "export", service.data, "office", "-o", export)
    log_path = os.path.join(export, "log.jsonl")
    with open(log_path, "rb") as handle:
        lines = handle.read().splitlines(keepends=True)
    # An entry edited (its row's elapsed time), a line dropped, the rows reordered: each is found.
    edited = lines[1].replace(b'"elapsed_s":', b'"elapsed_s":1', 1)
    cases = {
        "edited": b"".join([lines[0], edited, *lines[2:]]),
        "dropped": b"".join([lines[0], *lines[2:]]),
    }
    for name, data in cases.items():
        with open(log_path, "wb") as handle:
            handle.write(data)
        done = ember("verify", export, "--log", log_path, check=False)
        assert done.returncode == 1 and "the log fails" in done.stdout, (name, done.stdout)
    with open(log_path, "wb") as handle:
        handle.write(b"".join(lines))
    episodes = os.path.join(export, "episodes.jsonl")
    with open(episodes, "rb") as handle:
        rows = handle.read().splitlines(keepends=True)
    with open(episodes, "wb") as handle:
        handle.write(b"".join(reversed(rows)))
    done = ember("verify", export, "--log", log_path, check=False)
    assert done.returncode == 1 and "is not the log's ranked row 1" in done.stdout, done.stdout


def test_reupload_is_200_another_record_is_409_and_close_needs_every_key(service, runs):
    server = service.serve()
    greedy, _ = runs["alpha"]
    stay, _ = runs["beta"]
    with service.client("alpha") as alpha:
        created = alpha.post("/api/boards/office/submissions", json={"policy": "p1"})
        assert created.status_code == 201
        submission = created.json()["id"]
        again = alpha.post("/api/boards/office/submissions", json={"policy": "p1"})
        assert again.status_code == 409 and again.json()["id"] == submission
        put = f"/api/submissions/{submission}/episodes/office-floor/0"
        first = alpha.put(put, content=record_of(greedy, "greedy", 0))
        assert first.status_code == 201, first.text
        row = first.json()
        assert row["policy"] == "alpha.p1" and row["record"] == "records/alpha.p1/office-floor/0.record.gz"
        # The same record decompressed (another encoding, the same SHA-256) is the same record: 200, the same row.
        plain = gzip.decompress(record_of(greedy, "greedy", 0))
        same = alpha.put(put, content=plain)
        assert (same.status_code, same.json()) == (200, row)
        other = alpha.put(put, content=record_of(stay, "stay", 0))
        assert other.status_code == 409 and "another record" in other.json()["error"]
        early = alpha.post(f"/api/submissions/{submission}/close")
        assert early.status_code == 409 and early.json()["missing"] == 1
        status = alpha.get(f"/api/submissions/{submission}").json()
        assert status["state"] == "open" and status["missing"] == [["office-floor", 1]] and status["rows"] == [row]
        assert alpha.put(put[:-1] + "1", content=record_of(greedy, "greedy", 1)).status_code == 201
        assert alpha.post(f"/api/submissions/{submission}/close").status_code == 200
        late = alpha.put(put[:-1] + "1", content=record_of(greedy, "greedy", 1))
        assert late.status_code == 409 and "closed" in late.json()["error"]
        listed = httpx.get(f"{server.url}/api/boards/office/submissions").json()
        assert [(s["team"], s["policy"], s["state"]) for s in listed] == [("alpha", "p1", "closed")]
        record = httpx.get(f"{server.url}/api/records/{row['record_sha256']}")
        assert record.status_code == 200 and record.content == record_of(greedy, "greedy", 0)
        assert "content-encoding" not in record.headers
