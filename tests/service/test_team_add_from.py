"""``ember service team add DATA --from FILE -o DIR`` (service.md §2): every team of a file of names in one go,
each token in DIR/TEAM.token (0600), or nothing at all; the tokens work against a real server."""

import hashlib
import os
import re
import stat

import httpx
import sqlalchemy as sa

from ember.service import tables
from ember.service.registry import open_service, team_of_token

from helpers.service import ember

TOKEN = re.compile(r"ember_[A-Za-z0-9_-]{43}")
NAMES = ["north", "South_2", "east-3"]


def team_of(service, token):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            found = team_of_token(connection, token)
            return None if found is None else found.name
    finally:
        db.dispose()


def teams(service):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            return sorted(connection.execute(sa.select(tables.teams.c.name)).scalars())
    finally:
        db.dispose()


def names_file(root, text):
    path = os.path.join(root, "teams.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_every_team_of_the_file_gets_a_token_file_of_its_own(service):
    path = names_file(service.root, "# the teams of the course\nnorth\n\n  South_2  \r\neast-3\n")
    out = os.path.join(service.root, "tokens")
    done = ember("service", "team", "add", service.data, "--from", path, "-o", out)
    assert done.stdout == ""
    assert "added 3 teams" in done.stderr and out in done.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700
    assert sorted(os.listdir(out)) == sorted(f"{name}.token" for name in NAMES)
    tokens = {}
    for name in NAMES:
        token_path = os.path.join(out, f"{name}.token")
        assert stat.S_IMODE(os.stat(token_path).st_mode) == 0o600
        with open(token_path, encoding="utf-8") as handle:
            text = handle.read()
        assert text.endswith("\n") and TOKEN.fullmatch(text[:-1])
        tokens[name] = text[:-1]
        assert team_of(service, tokens[name]) == name
    assert len(set(tokens.values())) == 3
    assert teams(service) == sorted(["alpha", "beta", "gamma", *NAMES])
    # Only the SHA-256 is stored, as for one team.
    if os.path.exists(os.path.join(service.data, "ember.db")):
        with open(os.path.join(service.data, "ember.db"), "rb") as handle:
            data = handle.read()
        for token in tokens.values():
            assert token.encode() not in data and hashlib.sha256(token.encode()).hexdigest().encode() in data
    # Each token authenticates its team on a real server (ember submit reads such a file with --token-file).
    server = service.serve()
    answer = httpx.post(f"{server.url}/api/boards/office/submissions", json={"policy": "p"},
                        headers={"Authorization": f"Bearer {tokens['east-3']}"}, timeout=30)  # fmt: skip
    assert answer.status_code == 201, answer.text
    listing = httpx.get(f"{server.url}/api/boards/office/submissions", timeout=30,
                        headers={"Authorization": f"Bearer {tokens['east-3']}"}).json()  # fmt: skip
    assert [entry["team"] for entry in listing] == ["east-3"]


def test_a_bad_line_is_named_and_nothing_is_made(service):
    out = os.path.join(service.root, "tokens")
    cases = (
        ("north\nbad.name\n", ":2: team name 'bad.name': expected [A-Za-z0-9][A-Za-z0-9_-]{0,23}"),
        ("north\n" + "x" * 25 + "\n", ":2: team name 'xxxxxxxxxxxxxxxxxxxxxxxxx': expected"),
        ("north\nsouth\nNORTH\n", ":3: team name 'NORTH': given already as 'north' at "),
        ("north\nBeta\n", ":2: team 'Beta': taken (by 'beta'; names are unique ignoring case)"),
        ("north\n\xff\n", ":2: team name"),
        ("# nobody\n\n", "expected at least one team name, got none"),
    )
    for text, message in cases:
        path = names_file(service.root, text)
        done = ember("service", "team", "add", service.data, "--from", path, "-o", out, check=False)
        assert done.returncode == 2, (text, done.stderr)
        assert done.stdout == "" and done.stderr.count("\n") == 1 and message in done.stderr, (text, done.stderr)
        assert not os.path.exists(out), text
        assert teams(service) == ["alpha", "beta", "gamma"], text
    with open(os.path.join(service.root, "latin1.txt"), "wb") as handle:
        handle.write(b"north\nn\xe9\n")
    done = ember("service", "team", "add", service.data, "--from", os.path.join(service.root, "latin1.txt"), "-o",
                 out, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == "" and "latin1.txt:2: expected UTF-8 text" in done.stderr
    assert not os.path.exists(out) and teams(service) == ["alpha", "beta", "gamma"]


def test_the_output_and_the_arguments_are_checked_before_anything_is_made(service):
    path = names_file(service.root, "north\n")
    existing = os.path.join(service.root, "there")
    os.mkdir(existing)
    for argv, message in (
        (("--from", path), "expected -o DIR"),
        (("--from", path, "-o", existing), "exists already; the tokens go to a new directory"),
        (("--from", path, "-o", os.path.join(service.root, "no", "such")), "No such file or directory"),
        (("north", "--from", path, "-o", os.path.join(service.root, "t")), "expected TEAM or --from FILE"),
        ((), "expected TEAM or --from FILE"),
        (("--from", os.path.join(service.root, "missing.txt"), "-o", os.path.join(service.root, "t")),
         "missing.txt: No such file or directory"),
    ):  # fmt: skip
        done = ember("service", "team", "add", service.data, *argv, check=False)
        assert done.returncode == 2 and done.stdout == "" and message in done.stderr, (argv, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
    assert os.listdir(existing) == [] and not os.path.exists(os.path.join(service.root, "t"))
    assert teams(service) == ["alpha", "beta", "gamma"]
