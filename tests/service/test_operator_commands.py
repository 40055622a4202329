"""The operator's everyday commands as real processes: ``team add -o`` / ``token add -o`` (a token file the
operator's alone), ``init`` on a service directory that exists, ``backup`` of PostgreSQL through pg_dump."""

import json
import os
import re
import shutil
import subprocess
import time

import httpx
import pytest

from ember.service.registry import contents, open_service, team_of_token

from helpers.service import PostgresCluster, ember

TOKEN = re.compile(r"ember_[A-Za-z0-9_-]{43}\n")


def teams_of(service):
    _, db = open_service(service.data)
    try:
        return contents(db)["teams"]
    finally:
        db.dispose()


@pytest.mark.parametrize("words", [("team", "add", "delta"), ("token", "add", "alpha")])
def test_a_token_written_with_o_is_a_new_file_the_operator_alone_reads(service, tmp_path, words):
    out = tmp_path / "t.token"
    umask = lambda: os.umask(0o022)  # noqa: E731 (a loose umask: the file's mode must not depend on it)
    done = ember("service", words[0], words[1], service.data, words[2], "-o", out, preexec_fn=umask)
    assert done.returncode == 0 and done.stdout == ""
    assert f"wrote the token of team {words[2]} to {out} (mode 0600)" in done.stderr
    assert os.stat(out).st_mode & 0o777 == 0o600
    token = out.read_text()
    assert TOKEN.fullmatch(token)
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            assert team_of_token(connection, token.strip()).name == words[2]
    finally:
        db.dispose()


def test_a_token_file_that_cannot_be_made_leaves_no_team(service, tmp_path):
    before = teams_of(service)
    existing = tmp_path / "taken.token"
    existing.write_text("keep\n")
    target = tmp_path / "elsewhere"
    target.write_text("other\n")
    link = tmp_path / "link.token"
    link.symlink_to(target)
    for path, said in ((existing, "exists already"), (link, "exists already"), (tmp_path / "no" / "x", "No such file")):
        done = ember("service", "team", "add", service.data, "delta", "-o", path, check=False)
        assert done.returncode == 2 and done.stdout == "", path
        assert said in done.stderr and str(path) in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert existing.read_text() == "keep\n" and target.read_text() == "other\n"
    assert teams_of(service) == before
    # A team that cannot be added (a taken name) leaves no token file behind.
    fresh = tmp_path / "fresh.token"
    done = ember("service", "team", "add", service.data, "Alpha", "-o", fresh, check=False)
    assert done.returncode == 2 and "taken" in done.stderr and not fresh.exists()


def listing(path):
    found = {}
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            content = None
            if os.path.isfile(full) and not name.startswith("ember.db"):
                with open(full, "rb") as handle:
                    content = handle.read()
            found[full] = (info.st_mode, info.st_size if content is None else content)
    return found


def test_init_on_a_service_directory_says_what_it_found_and_changes_nothing(service):
    before = listing(service.data)
    done = ember("service", "init", service.data)
    assert done.stdout == ""
    line = done.stderr.strip()
    assert "is a service directory already" in line and line.endswith("nothing changed."), line
    assert "1 boards, 3 teams, 0 submissions, 0 jobs" in line
    assert listing(service.data).keys() == before.keys()
    assert {k: v for k, v in listing(service.data).items() if "ember.db" not in k} == {
        k: v for k, v in before.items() if "ember.db" not in k
    }
    # Pointing an existing service at another database is refused, and nothing changes either.
    other = "sqlite:///" + os.path.join(service.root, "other.db")
    moved = ember("service", "init", service.data, "--database", other, check=False)
    assert moved.returncode == 2 and moved.stdout == "" and "--database names another" in moved.stderr
    assert not os.path.exists(os.path.join(service.root, "other.db"))
    assert listing(service.data).keys() == before.keys()


def test_init_on_a_directory_missing_its_key_pair_makes_it_and_says_so(service):
    from ember.service.anchor import KEY_FILE, PUBLIC_KEY_FILE

    os.remove(os.path.join(service.data, KEY_FILE))
    os.remove(os.path.join(service.data, PUBLIC_KEY_FILE))
    done = ember("service", "init", service.data)
    assert "made the log's key pair" in done.stderr and "nothing changed" not in done.stderr
    assert os.stat(os.path.join(service.data, KEY_FILE)).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_a_postgresql_backup_is_pg_dump_custom_format_and_restores(service, runs, postgres, tmp_path):
    server = service.serve()
    results, policy = runs["alpha"]
    ember("submit", server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy, results)
    out = tmp_path / "office.dump"
    done = ember("service", "backup", service.data, "-o", out)
    assert "for pg_restore" in done.stderr and "2 records" in done.stderr
    assert out.read_bytes()[:5] == b"PGDMP" and os.stat(out).st_mode & 0o777 == 0o600
    url = postgres.database()
    restore = shutil.which("pg_restore")
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    subprocess.run([restore, "--no-owner", f"--dbname={plain}", str(out)], check=True, capture_output=True)
    import psycopg

    with psycopg.connect(plain) as connection:
        assert connection.execute("SELECT count(*) FROM rows").fetchone() == (2,)
        assert connection.execute("SELECT count(*) FROM teams").fetchone() == (3,)
    listed = (tmp_path / "office.dump.records").read_text().split()
    assert len(listed) == 2 and all(name.startswith("records/") for name in listed)
    # A second backup to the same path is refused and leaves the first one whole.
    again = ember("service", "backup", service.data, "-o", out, check=False)
    assert again.returncode == 2 and "exists already" in again.stderr
    assert out.read_bytes()[:5] == b"PGDMP"


def test_a_failing_pg_dump_leaves_no_file(tmp_path):
    cluster = PostgresCluster()
    try:
        from ember.service.registry import init_service

        data = str(tmp_path / "DATA")
        init_service(data, cluster.database())
        cluster.stop()
        out = tmp_path / "down.dump"
        done = ember("service", "backup", data, "-o", out, check=False)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
        assert not out.exists() and not (tmp_path / "down.dump.records").exists()
    finally:
        cluster.close()


# -- list, withdraw, disable, rerun ------------------------------------------------------------------


def log_of(url, board="office"):
    return [json.loads(line) for line in httpx.get(f"{url}/api/boards/{board}/log").content.splitlines()]


def listed(data, what, *more):
    done = ember("service", "list", data, what, "--format", "json", *more)
    return json.loads(done.stdout)


def test_the_operator_lists_withdraws_and_disables_and_each_act_is_logged(service, runs, tmp_path):
    server = service.serve()
    for team in ("alpha", "beta"):
        results, policy = runs[team]
        ember("submit", server.url, "office", "--token-file", service.token_file(team), "--policy", policy, results)
    boards = listed(service.data, "boards")
    assert [(b["board"], b["closed submissions"], b["teams"], b["hidden track"]) for b in boards] == [
        ("office", 2, 2, "no")
    ]
    subs = listed(service.data, "submissions", "--board", "office")
    assert [(s["team"], s["state"], s["rows"]) for s in subs] == [("alpha", "closed", 2), ("beta", "closed", 2)]
    teams = {t["team"]: t for t in listed(service.data, "teams")}
    assert teams["gamma"]["submissions"] == 0 and teams["alpha"]["state"] == "active"
    assert teams["alpha"]["live tokens"] == 1
    assert [t["team"] for t in listed(service.data, "teams", "--board", "office")] == ["alpha", "beta"]
    table = ember("service", "list", service.data, "submissions").stdout
    assert table.splitlines()[0].split()[:4] == ["id", "board", "team", "policy"] and subs[0]["id"] in table
    assert listed(service.data, "jobs") == []

    # The operator withdraws beta's submission: the ranking loses it, the log says who did.
    beta = subs[1]["id"]
    done = ember("service", "submission", "withdraw", service.data, beta)
    assert f"withdrew submission {beta} (beta." in done.stderr and done.stdout == ""
    again = ember("service", "submission", "withdraw", service.data, beta, check=False)
    assert again.returncode == 2 and "withdrawn already" in again.stderr
    unknown = ember("service", "submission", "withdraw", service.data, "nope", check=False)
    assert unknown.returncode == 2 and "no such submission" in unknown.stderr
    entry = log_of(server.url)[-1]
    assert (entry["event"], entry["team"], entry["data"]) == ("operator_withdraw", "beta", {"submission": beta})
    assert wait_ranked(server.url, 1) == ["alpha"]
    export = tmp_path / "export"
    ember("service", "export", service.data, "office", "-o", export)
    ember("verify", export, "--log", export / "log.jsonl")

    # Team alpha disabled: its token stops working at once; its closed submission stays ranked.
    with service.client("alpha") as alpha:
        assert alpha.get("/api/boards/office/submissions").status_code == 200
        done = ember("service", "team", "disable", service.data, "alpha")
        assert "team alpha disabled" in done.stderr and "logged on 1 board" in done.stderr
        answer = alpha.post("/api/boards/office/submissions", json={"policy": "more"})
        assert answer.status_code == 401, answer.text
    entry = log_of(server.url)[-1]
    assert (entry["event"], entry["team"], entry["data"]) == ("team_disable", "alpha", {"team": "alpha"})
    assert {t["team"]: t["state"] for t in listed(service.data, "teams")}["alpha"] == "disabled"
    ember("service", "token", "add", service.data, "alpha", "-o", tmp_path / "new.token")
    with service.client() as anyone:
        token = (tmp_path / "new.token").read_text().strip()
        answer = anyone.post(
            "/api/boards/office/submissions", json={"policy": "more"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 401
    twice = ember("service", "team", "disable", service.data, "alpha", check=False)
    assert twice.returncode == 2 and "disabled already" in twice.stderr
    assert wait_ranked(server.url, 1) == ["alpha"]


def wait_ranked(url, count):
    for _ in range(300):
        answer = httpx.get(f"{url}/api/boards/office/ranking.json")
        if answer.status_code == 200 and len(answer.json()["ranked"]) == count:
            return [entry["policy"].split(".")[0] for entry in answer.json()["ranked"]]
        time.sleep(0.1)
    raise AssertionError(f"the ranking never had {count} policies: {answer.text}")


def test_a_job_run_again_is_a_new_job_for_the_same_bundle_and_is_logged(tmp_path):
    from helpers.bundles import python_bundle
    from helpers.hidden import HiddenService

    hidden = HiddenService(hidden_seeds=2, teams=("alpha",))
    try:
        hidden.serve()
        job = hidden.submit("alpha", python_bundle(tmp_path / "walker.tar.gz"))
        running = ember("service", "job", "rerun", hidden.data, job, check=False)
        if running.returncode == 2:  # still queued or running: refused, and nothing queued
            assert "only a job that ended can run again" in running.stderr
        hidden.wait_job("alpha", job)
        jobs = listed(hidden.data, "jobs")
        before = [j for j in jobs if j["id"] != job]
        done = ember("service", "job", "rerun", hidden.data, job)
        new = done.stdout.strip()
        assert new != job and f"job {new} queued" in done.stderr
        entry = log_of(hidden.server.url)[-1]
        assert (entry["event"], entry["team"], entry["data"]) == ("job_rerun", "alpha", {"job": job, "new_job": new})
        finished = hidden.wait_job("alpha", new)
        assert finished["state"] == "done"
        jobs = {j["id"]: j for j in listed(hidden.data, "jobs")}
        assert jobs[job]["state"] == "done" and jobs[new]["state"] == "done" and len(jobs) == len(before) + 2
        for bad, said in (("nope", "no such job"), ("0" * 8 + "-0000-4000-8000-" + "0" * 12, "no such job")):
            refused = ember("service", "job", "rerun", hidden.data, bad, check=False)
            assert refused.returncode == 2 and said in refused.stderr and refused.stdout == ""
        ember("service", "board", "reveal", hidden.data, "office")
        after = ember("service", "job", "rerun", hidden.data, job, check=False)
        assert after.returncode == 2 and "revealed" in after.stderr
    finally:
        hidden.close()
