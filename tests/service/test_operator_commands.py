"""The operator's everyday commands as real processes: ``team add -o`` / ``token add -o`` (a token file the
operator's alone), ``init`` on a service directory that exists, ``backup`` of PostgreSQL through pg_dump."""

import os
import re
import shutil
import subprocess

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
