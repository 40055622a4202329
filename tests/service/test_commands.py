"""``ember service init | board add | team add | token add | token revoke | export | reverify | backup``
(service.md §2) as real processes."""

import hashlib
import json
import os
import re
import sqlite3

import httpx
import pytest
import sqlalchemy as sa

from ember.errors import ServiceError
from ember.service import tables
from ember.service.registry import add_team, commitment_of, init_service, open_service, team_of_token

from helpers.service import ember, record_of

TOKEN = re.compile(r"ember_[A-Za-z0-9_-]{43}")


def team_of(service, token):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            found = team_of_token(connection, token)
            return None if found is None else found.name
    finally:
        db.dispose()


def test_teams_and_tokens(service):
    token = service.tokens["alpha"]
    assert TOKEN.fullmatch(token) and team_of(service, token) == "alpha"
    if service.data and os.path.exists(os.path.join(service.data, "ember.db")):
        with open(os.path.join(service.data, "ember.db"), "rb") as handle:
            data = handle.read()
        assert token.encode() not in data and hashlib.sha256(token.encode()).hexdigest().encode() in data
    for name, reason in (("a.b", "expected"), ("Alpha", "taken")):
        done = ember("service", "team", "add", service.data, name, check=False)
        assert done.returncode == 2 and reason in done.stderr and done.stdout == "", name
    second = ember("service", "token", "add", service.data, "alpha").stdout.strip()
    assert TOKEN.fullmatch(second) and second != token and team_of(service, second) == "alpha"
    revoked = ember("service", "token", "revoke", service.data, "alpha", second[:12])
    assert "revoked 1 token of team alpha" in revoked.stderr
    assert team_of(service, second) is None and team_of(service, token) == "alpha"
    ember("service", "token", "revoke", service.data, "alpha", "--all")
    assert team_of(service, token) is None
    again = ember("service", "token", "revoke", service.data, "alpha", "--all", check=False)
    assert again.returncode == 2 and "no live token" in again.stderr


def test_boards_are_immutable_and_named_by_an_id(service, tmp_path):
    campaign = os.path.join(service.root, "board.toml")
    again = ember("service", "board", "add", service.data, "office", "--campaign", campaign, check=False)
    assert again.returncode == 2 and "exists already" in again.stderr
    bad = ember("service", "board", "add", service.data, "../x", "--campaign", campaign, check=False)
    assert bad.returncode == 2 and "expected an ID" in bad.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('campaign = "x"\nseeds = [0, 0]\nscenarios = ["builtin:office"]\n')
    done = ember("service", "board", "add", service.data, "other", "--campaign", wrong, check=False)
    assert done.returncode == 2 and "seeds[1]" in done.stderr


def test_a_hidden_track_is_committed_and_its_seeds_never_served(service, tmp_path):
    hidden = tmp_path / "hidden.toml"
    hidden.write_text('campaign = "h"\nseeds = { start = 0, count = 3 }\nscenarios = ["builtin:office"]\n')
    open_file = os.path.join(service.root, "board.toml")
    done = ember("service", "board", "add", service.data, "secret", "--campaign", open_file, "--hidden", hidden)
    commitment = re.search(r"committed: ([0-9a-f]{64})", done.stderr).group(1)
    _, db = open_service(service.data)
    with db.transaction(read=True) as connection:
        board = connection.execute(sa.select(tables.boards).where(tables.boards.c.name == "secret")).one()
    db.dispose()
    secret = json.loads(bytes(board.hidden_secret))
    seeds = [key[2] for key in secret["keys"]]
    assert len(seeds) == 3 and seeds == sorted(set(seeds)) and all(0 <= s < 2**63 for s in seeds)
    assert re.fullmatch(r"[0-9a-f]{64}", secret["salt"])
    assert commitment_of(secret["keys"], secret["salt"]) == commitment
    server = service.serve()
    public = httpx.get(f"{server.url}/api/boards/secret").json()
    assert public["hidden"]["commitment"] == commitment and public["hidden"]["revealed"] is None
    assert public["hidden"]["scenarios"][0]["seeds"] == 3
    log = httpx.get(f"{server.url}/api/boards/secret/log").content
    assert json.loads(log.splitlines()[0])["data"]["hidden_commitment"] == commitment
    served = log + httpx.get(f"{server.url}/api/boards/secret").content
    assert not any(str(seed).encode() in served for seed in seeds)
    scenario = httpx.get(f"{server.url}/api/boards/secret/scenarios/office-floor.json")
    assert (
        scenario.status_code == 200
        and hashlib.sha256(scenario.content).hexdigest() in public["scenarios"][0]["scenario_hash"]
    )
    assert httpx.get(f"{server.url}/api/boards/secret/hidden/ranking.json").status_code == 404


def test_export_without_a_ranked_submission_is_exit_2(service, tmp_path):
    done = ember("service", "export", service.data, "office", "-o", tmp_path / "out", check=False)
    assert done.returncode == 2 and "no ranked submission" in done.stderr and not (tmp_path / "out").exists()


def test_reverify_and_backup(service, runs, tmp_path):
    server = service.serve()
    results, policy = runs["alpha"]
    ember("submit", server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy, results)
    clean = ember("service", "reverify", service.data, "office")
    assert clean.stdout == "ember service reverify: 2 rows, 0 differ.\n"
    # A stored record replaced by another valid record of the same episode: its recomputation differs.
    stored = [name for name in service.stored_files() if name.endswith(".record.gz")]
    first_row = json.loads(httpx.get(f"{server.url}/api/boards/office/log").content.splitlines()[1])["row"]
    replaced = f"{first_row['record_sha256'][:2]}/{first_row['record_sha256']}.record.gz"
    with open(os.path.join(service.data, "records", replaced), "wb") as handle:
        handle.write(record_of(runs["beta"][0], "stay", first_row["seed"]))
    version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
    differ = ember("service", "reverify", service.data, "office", check=False)
    assert differ.returncode == 1 and differ.stdout.endswith("2 rows, 1 differ.\n")
    log = httpx.get(f"{server.url}/api/boards/office/log").content.splitlines()
    assert len(log) == version + 1 and json.loads(log[-1])["event"] == "reverify"
    out = tmp_path / "copy.db"
    done = ember("service", "backup", service.data, "-o", out, check=False)
    assert done.returncode == 0, done.stderr
    assert os.stat(out).st_mode & 0o777 == 0o600 and os.stat(f"{out}.records").st_mode & 0o777 == 0o600
    if os.path.exists(os.path.join(service.data, "ember.db")):
        copy = sqlite3.connect(out)
        assert copy.execute("SELECT count(*) FROM rows").fetchone() == (2,)
        copy.close()
    else:  # PostgreSQL: pg_dump's custom format (restored in test_operator_commands)
        assert out.read_bytes()[:5] == b"PGDMP"
    listed = (tmp_path / "copy.db.records").read_text().split()
    assert sorted(listed) == sorted(f"records/{name}" for name in stored)


def test_init_refuses_a_bad_database_url(tmp_path):
    done = ember("service", "init", tmp_path / "DATA", "--database", "mysql://x/y", check=False)
    assert done.returncode == 2 and "expected sqlite:/// or postgresql+psycopg://" in done.stderr
    assert not (tmp_path / "DATA").exists()


def test_team_names_follow_the_pattern_and_are_unique_ignoring_case(tmp_path):
    init_service(str(tmp_path / "DATA"))
    _, db = open_service(str(tmp_path / "DATA"))
    try:
        assert TOKEN.fullmatch(add_team(db, "Team_1-x"))
        for name in ("a.b", "_x", "-x", "x" * 25, "", "é", "a b", "team_1-X"):
            with pytest.raises(ServiceError):
                add_team(db, name)
        assert TOKEN.fullmatch(add_team(db, "x" * 24))
    finally:
        db.dispose()
