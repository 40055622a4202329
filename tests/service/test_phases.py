"""A board's phases (docs/service.md, "Phases"): ``board add --opens --closes --reveal-at --description``, the
409 of everything a team sends outside them, the ``serve`` parent's reveal at ``reveal_at`` (and at its next
start when it was down then), the board's JSON, and a submission's description and link.  Real ``ember``
commands, a real server (uvicorn) on SQLite and PostgreSQL; times are waited for by polling the clock."""

import datetime
import json
import os
import uuid

import httpx
import pytest
import sqlalchemy as sa

from ember.errors import ServiceError
from ember.service import audit, phases, tables
from ember.service.boards import load_board
from ember.service.hidden.reveal_at import Revealer
from ember.service.registry import open_service

from helpers.bundles import python_bundle
from helpers.service import Server, Service, ember, record_of, wait_for

UTC = datetime.timezone.utc
TAGGED = 'campaign = "hidden"\nscenarios = [{ source = "builtin:office", seeds = { live = 1, final = 1 } }]\n'
PUBLIC_KEYS = ("opens", "closes", "reveal_at", "description", "teams", "submissions")


def at(seconds):
    """UTC now plus ``seconds``, to the second, as ``--opens`` takes it; and that moment."""
    moment = (datetime.datetime.now(UTC) + datetime.timedelta(seconds=seconds)).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ"), moment


def passed(moment):
    wait_for(lambda: datetime.datetime.now(UTC) >= moment, timeout=120, what=f"the clock to pass {moment}")


def logged_at(entry):
    return datetime.datetime.strptime(entry["at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def board_add(service, name, *options, check=True):
    campaign = os.path.join(service.root, "board.toml")
    return ember("service", "board", "add", service.data, name, "--campaign", campaign, *options, check=check)


def hidden_file(service):
    path = os.path.join(service.root, "hidden.toml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(TAGGED)
    return path


def board_row(service, name):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            return load_board(connection, name)
    finally:
        db.dispose()


# -- the one decision, at given moments ------------------------------------------------------------


class Phased:
    """What ``refuse_outside`` reads of a board: its name and stored phases."""

    def __init__(self, opens=None, closes=None, reveal_at=None):
        self.name, self.opens, self.closes, self.reveal_at = "b", opens, closes, reveal_at


def moment(text):
    return phases.moment_of(phases.parse_time(text, "t"))


def refusal(board, when, bundle=False):
    try:
        phases.refuse_outside(board, bundle=bundle, now=moment(when))
    except ServiceError as exc:
        return exc.status, str(exc)
    return None


def test_a_board_takes_what_a_team_sends_from_opens_until_closes_and_bundles_until_reveal_at():
    board = Phased("2026-12-03T07:00:00Z", "2026-12-03T08:00:00Z", "2026-12-03T09:00:00Z")
    before = refusal(board, "2026-12-03T06:59:59Z")
    assert before == (
        409,
        "board b opens at 2026-12-03T07:00:00Z: it takes nothing before (it is 2026-12-03T06:59:59Z)",
    )
    assert refusal(board, "2026-12-03T07:00:00Z") is None
    assert refusal(board, "2026-12-03T07:59:59Z", bundle=True) is None
    after = refusal(board, "2026-12-03T08:00:00Z")
    assert after == (409, "board b closed at 2026-12-03T08:00:00Z: it takes nothing after (it is 2026-12-03T08:00:00Z)")
    assert refusal(board, "2026-12-03T08:00:00Z", bundle=True) == after
    # Without --closes, bundles stop at the reveal; records and submissions do not.
    open_ended = Phased(reveal_at="2026-12-03T09:00:00Z")
    assert refusal(open_ended, "2026-12-03T09:00:00Z") is None
    status, message = refusal(open_ended, "2026-12-03T09:00:00Z", bundle=True)
    assert status == 409 and message.startswith("board b reveals its hidden track at 2026-12-03T09:00:00Z")
    assert refusal(Phased(), "1970-01-01T00:00:00Z", bundle=True) is None
    assert phases.reveal_due(open_ended, moment("2026-12-03T09:00:00Z")) is True
    assert phases.reveal_due(open_ended, moment("2026-12-03T08:59:59Z")) is False


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("2026-12-03T07:00:00Z", "2026-12-03T07:00:00Z"),
        ("2026-12-03T07:00Z", "2026-12-03T07:00:00Z"),
        ("2026-12-03T07:00:00+00:00", "2026-12-03T07:00:00Z"),
        ("2026-12-03 07:00:00Z", "2026-12-03T07:00:00Z"),
    ],
)
def test_utc_times_are_stored_to_the_second(text, stored):
    assert phases.parse_time(text, "--opens") == stored


# -- board add ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--opens", "tomorrow"], "--opens: expected a UTC time in ISO 8601 to the second"),
        (["--closes", "2026-12-03T07:00:00"], "(no time zone)"),
        (["--opens", "2026-12-03T07:00:00+01:00"], "(offset +0100)"),
        (["--closes", "2026-12-03T07:00:00.5Z"], "(a fraction of a second)"),
        (["--opens", "2026-12-03T08:00:00Z", "--closes", "2026-12-03T08:00:00Z"],
         "--closes: expected a time after --opens 2026-12-03T08:00:00Z, got 2026-12-03T08:00:00Z"),
        (["--reveal-at", "2026-12-03T07:00:00Z"], "--reveal-at: the board has no hidden track to reveal"),
        (["--hidden", "HIDDEN", "--closes", "2026-12-03T08:00:00Z", "--reveal-at", "2026-12-03T07:00:00Z"],
         "--reveal-at: expected a time at or after --closes 2026-12-03T08:00:00Z, got 2026-12-03T07:00:00Z"),
        (["--description", "  "], "--description: expected some text, got none"),
        (["--description", "x" * 2001], "--description: expected at most 2000 characters, got 2001"),
    ],
)  # fmt: skip
def test_board_add_refuses_bad_phases_in_one_line(service, options, message):
    options = [hidden_file(service) if word == "HIDDEN" else word for word in options]
    done = board_add(service, "phased", *options, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert board_row(service, "phased") is None


def test_the_board_json_shows_phases_description_and_counts(service, runs):
    service.serve()
    board_add(service, "later", "--opens", "2099-01-01T00:00:00Z", "--description", "The spring round.\nBe kind.")
    with httpx.Client(base_url=service.server.url) as anonymous:
        office = anonymous.get("/api/boards/office").json()
        later = anonymous.get("/api/boards/later").json()
        listed = anonymous.get("/api/boards")
    assert {key: office[key] for key in PUBLIC_KEYS} == dict.fromkeys(PUBLIC_KEYS[:4]) | {"teams": 0, "submissions": 0}
    assert {key: later[key] for key in PUBLIC_KEYS} == {
        "opens": "2099-01-01T00:00:00Z", "closes": None, "reveal_at": None,
        "description": "The spring round.\nBe kind.", "teams": 0, "submissions": 0,
    }  # fmt: skip
    assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == "*"
    shown = json.loads(ember("service", "list", service.data, "boards", "--format", "json").stdout)
    assert [(b["board"], b["opens"], b["closes"], b["reveal at"]) for b in shown] == [
        ("office", None, None, None), ("later", "2099-01-01T00:00:00Z", None, None)
    ]  # fmt: skip
    assert listed.json() == [later, office]
    # Teams with a submission (open ones too) and closed submissions.
    results, policy = runs["alpha"]
    ember("submit", service.server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy,
          results)  # fmt: skip
    with service.client("beta") as beta:
        assert beta.post("/api/boards/office/submissions", json={"policy": "p"}).status_code == 201
    counted = httpx.get(f"{service.server.url}/api/boards/office").json()
    assert (counted["teams"], counted["submissions"]) == (2, 1)
    assert httpx.get(f"{service.server.url}/api/boards").json()[1] == counted


# -- the phases on a real server ---------------------------------------------------------------------


def test_a_board_refuses_everything_a_team_sends_before_it_opens_and_after_it_closes(service, runs, tmp_path):
    server = service.serve()
    hidden = hidden_file(service)
    board_add(service, "later", "--opens", "2099-01-01T00:00:00Z", "--hidden", hidden)
    bundle = python_bundle(tmp_path / "walker.tar.gz")
    with open(bundle, "rb") as handle:
        bundle_bytes = handle.read()
    with service.client("alpha") as alpha:
        early = alpha.post("/api/boards/later/submissions", json={"policy": "p"})
        assert early.status_code == 409
        assert early.json()["error"].startswith("board later opens at 2099-01-01T00:00:00Z: it takes nothing before")
        sent = alpha.post("/api/boards/later/agents", content=bundle_bytes)
        assert sent.status_code == 409 and sent.json()["error"].startswith("board later opens at 2099-01-01T00:00:00Z")
    results, policy = runs["alpha"]
    closes, closing = at(25)
    board_add(service, "ending", "--closes", closes, "--hidden", hidden)
    with service.client("alpha") as alpha, service.client("beta") as beta:
        made = alpha.post("/api/boards/ending/submissions", json={"policy": policy})
        assert made.status_code == 201
        put = f"/api/submissions/{made.json()['id']}/episodes/office-floor/"
        assert alpha.put(put + "0", content=record_of(results, policy, 0)).status_code == 201
        passed(closing)
        message = f"board ending closed at {closes}: it takes nothing after"
        refused = {
            "record": alpha.put(put + "1", content=record_of(results, policy, 1)),
            "close": alpha.post(f"/api/submissions/{made.json()['id']}/close"),
            "submission": beta.post("/api/boards/ending/submissions", json={"policy": "p"}),
            "bundle": beta.post("/api/boards/ending/agents", content=bundle_bytes),
        }
        for what, answer in refused.items():
            assert answer.status_code == 409 and answer.json()["error"].startswith(message), what
        # The name's own 409 still names the submission, so 'ember submit' finds it again.
        again = alpha.post("/api/boards/ending/submissions", json={"policy": policy})
        assert again.status_code == 409 and again.json()["id"] == made.json()["id"]
        status = alpha.get(f"/api/submissions/{made.json()['id']}").json()
        assert status["state"] == "open" and status["missing"] == [["office-floor", 1]]
    # ember submit after the close: the refusal named, exit 1, nothing changed.
    late = ember("submit", server.url, "ending", "--token-file", service.token_file("alpha"), "--policy", policy,
                 results, check=False)  # fmt: skip
    assert late.returncode == 1 and f"office-floor seed 1: refused: {message}" in late.stderr, late.stderr


def test_the_serve_parent_reveals_at_reveal_at_and_at_its_next_start_after_it(service):
    server = service.serve()
    hidden = hidden_file(service)
    reveal_at, revealing = at(4)
    board_add(service, "secret", "--hidden", hidden, "--reveal-at", reveal_at)
    url = server.url

    def revealed(name):
        return httpx.get(f"{url}/api/boards/{name}").json()["hidden"]["revealed"]

    found = wait_for(lambda: revealed("secret"), timeout=120, what="the reveal at reveal-at")
    log = [json.loads(line) for line in httpx.get(f"{url}/api/boards/secret/log").text.splitlines()]
    assert [entry["event"] for entry in log] == ["board", "reveal"] and log[-1]["data"] == found
    assert logged_at(log[-1]) >= revealing  # not before its time
    assert "ember: board secret: the hidden track is revealed at its reveal-at (2 keys)." in server.read_log()
    checked = ember("service", "check-commitment", url, "secret", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # A reveal_at that passes while serve is down: the next start reveals.
    server.stop()
    reveal_at, revealing = at(2)
    board_add(service, "missed", "--hidden", hidden, "--reveal-at", reveal_at)
    passed(revealing)
    assert board_row(service, "missed").hidden.get("revealed") is None
    service.server = server = Server(service.data)
    url = server.url
    wait_for(lambda: revealed("missed"), timeout=120, what="the reveal at the start after reveal-at")
    log = [json.loads(line) for line in httpx.get(f"{url}/api/boards/missed/log").text.splitlines()]
    assert [entry["event"] for entry in log] == ["board", "reveal"] and logged_at(log[-1]) >= revealing
    with service.client("alpha") as alpha:
        sent = alpha.post("/api/boards/missed/agents", content=b"\x1f\x8b")
    assert sent.status_code == 409 and "revealed" in sent.json()["error"]


def test_the_reveal_at_reveal_at_waits_while_a_job_of_the_board_is_queued(service):
    board_add(service, "secret", "--hidden", hidden_file(service), "--reveal-at", "2000-01-01T00:00:00Z")
    _, db = open_service(service.data)
    said = []
    revealer = Revealer(db, say=said.append)
    try:
        with db.transaction() as connection:
            team = connection.execute(sa.select(tables.teams.c.id).where(tables.teams.c.name == "alpha")).scalar_one()
            board = load_board(connection, "secret")
            job = str(uuid.uuid4())
            connection.execute(
                sa.insert(tables.jobs).values(
                    id=job, board_id=board.id, team_id=team, policy="p", state="queued", bundle=f"bundles/{job}.tar.gz",
                    created_at=audit.now(), key_set="live",
                )
            )  # fmt: skip
        revealer.round()
        revealer.round()
        assert said == [
            f"ember: board secret: the reveal at its reveal-at waits: board 'secret': job {job} is queued or running; "
            "reveal when no job runs"
        ]  # said once
        assert board_row(service, "secret").hidden.get("revealed") is None
        with db.transaction() as connection:
            connection.execute(sa.update(tables.jobs).where(tables.jobs.c.id == job).values(state="failed"))
        revealer.round()
        revealer.round()
        assert said[1:] == ["ember: board secret: the hidden track is revealed at its reveal-at (2 keys)."]
        assert board_row(service, "secret").hidden["revealed"] is not None
    finally:
        db.dispose()


# -- a submission's description and link ----------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def refusing(request, tmp_path_factory):
    """One served board for the requests it refuses, each checked to leave it as it was (no submission)."""
    database = None if request.param == "sqlite" else request.getfixturevalue("postgres").database()
    made = Service(str(tmp_path_factory.mktemp("refusing")), database)
    made.serve()
    yield made
    made.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"description": "x" * 201}, "$.description: expected at most 200 characters, got 201"),
        ({"description": "two\nlines"}, "$.description: expected one line of printable text"),
        ({"description": 5}, "$.description: expected a line of text, got 5"),
        ({"description": ""}, "$.description: expected a line of text"),
        ({"link": "ftp://example.org/x"}, "$.link: expected an http:// or https:// URL"),
        ({"link": "javascript:alert(1)"}, "$.link: expected an http:// or https:// URL"),
        ({"link": "https://user@example.org/"}, "$.link: expected an http:// or https:// URL"),
        ({"link": "https://example.org/a b"}, "$.link: expected an http:// or https:// URL"),
        ({"link": "https://example.org/" + "x" * 281}, "$.link: expected at most 300 characters, got 301"),
        ({"link": ["https://example.org/"]}, "$.link: expected an http:// or https:// URL"),
    ],
)
def test_a_bad_description_or_link_is_refused_naming_the_field(refusing, body, message):
    with refusing.client("alpha") as alpha:
        answer = alpha.post("/api/boards/office/submissions", json={"policy": "p", **body})
        assert answer.status_code == 400 and answer.json()["error"].startswith(message), answer.text
        assert alpha.get("/api/boards/office/submissions").json() == []


def test_a_description_and_a_link_are_kept_and_shown(service):
    service.serve()
    about = {"description": "Greedy, then a detour: see the write-up.", "link": "https://example.org/p?a=1&b=2#x"}
    with service.client("alpha") as alpha, service.client("beta") as beta:
        made = alpha.post("/api/boards/office/submissions", json={"policy": "p", **about}).json()["id"]
        plain = beta.post("/api/boards/office/submissions", json={"policy": "q", "link": None}).json()["id"]
        status = alpha.get(f"/api/submissions/{made}").json()
        assert {key: status[key] for key in about} == about
        listed = alpha.get("/api/boards/office/submissions").json()
        assert [(item["id"], item["description"], item["link"]) for item in listed] == [(made, *about.values())]
        shown = beta.get(f"/api/submissions/{plain}").json()
        assert (shown["description"], shown["link"]) == (None, None)
