"""The hidden track's secrecy (service.md §6): the reveal, the commitment check, the ranked jobs.

Until ``reveal`` the keys (scenario, hash, secret seed) and the salt stay
in ``boards.hidden_secret``, which nothing serves; the board's public
JSON and first log entry carry only their ``commitment``.  ``reveal``
(refused while a job of the board is queued or running) publishes keys
and salt in the board's JSON and in a ``reveal`` log entry; from then on
hidden rows and records are served and no bundle is taken.
``check_commitment`` is what anyone can run against a service: the
commitment recomputed from the revealed keys and salt, and compared with
the one the board published and logged first.
"""

import json

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..errors import ServiceError
from . import audit, jobs, tables
from .registry import commitment_of


def reveal(db, name):
    """Publish board ``name``'s hidden keys and salt; returns them.  Refused while one of its jobs runs."""
    with db.transaction() as connection:
        found = connection.execute(sa.select(tables.boards.c.id).where(tables.boards.c.name == name)).scalar()
        if found is None:
            raise ServiceError(f"board {name!r}: no such board")
        board = audit.lock_board(connection, found)
        if board.hidden is None:
            raise ServiceError(f"board {name!r}: has no hidden track")
        hidden = json.loads(bytes(board.hidden))
        if hidden.get("revealed") is not None:
            raise ServiceError(f"board {name!r}: the hidden track is revealed already")
        busy = jobs.running_on(connection, board.id)
        if busy:
            raise ServiceError(f"board {name!r}: job {busy[0]} is queued or running; reveal when no job runs")
        secret = json.loads(bytes(board.hidden_secret))
        hidden["revealed"] = secret
        connection.execute(
            sa.update(tables.boards)
            .where(tables.boards.c.id == board.id)
            .values(hidden=canonical_json_reference(hidden))
        )
        audit.append(connection, board.id, "reveal", data=secret)
    return secret


def revealed(connection, board_id):
    """True when the board's hidden track is revealed."""
    data = connection.execute(sa.select(tables.boards.c.hidden).where(tables.boards.c.id == board_id)).scalar()
    return data is not None and json.loads(bytes(data)).get("revealed") is not None


class CommitmentCheck:
    """The outcome of checking a board's commitment: ``problems`` (one line each), empty when it holds."""

    def __init__(self, board, commitment, problems):
        self.board = board
        self.commitment = commitment
        self.problems = problems

    @property
    def holds(self):
        return not self.problems


def check_board_commitment(public, first_entry):
    """Check a board's public JSON (``GET /api/boards/{board}``) and its first log entry (a dict).

    Raises ``ServiceError`` when there is nothing to check (no hidden track, or not revealed yet).
    """
    name = public.get("name")
    hidden = public.get("hidden")
    if not isinstance(hidden, dict):
        raise ServiceError(f"board {name!r}: has no hidden track")
    secret = hidden.get("revealed")
    if not isinstance(secret, dict):
        raise ServiceError(f"board {name!r}: the hidden track is not revealed yet: nothing to check")
    keys, salt = secret.get("keys"), secret.get("salt")
    published = hidden.get("commitment")
    problems = []
    if not isinstance(keys, list) or not all(
        isinstance(k, list) and len(k) == 3 and isinstance(k[0], str) and isinstance(k[1], str)
        and type(k[2]) is int and 0 <= k[2] < 2**63
        for k in keys
    ):  # fmt: skip
        raise ServiceError(f"board {name!r}: revealed.keys: expected [[scenario_id, scenario_hash, seed], ...]")
    if not isinstance(salt, str) or len(salt) != 64 or any(c not in "0123456789abcdef" for c in salt):
        raise ServiceError(f"board {name!r}: revealed.salt: expected 64 lowercase hex characters")
    recomputed = commitment_of(keys, salt)
    if recomputed != published:
        problems.append(f"the revealed keys and salt hash to {recomputed}, the board published {published}")
    logged = (first_entry.get("data") or {}).get("hidden_commitment") if isinstance(first_entry, dict) else None
    if first_entry is None or first_entry.get("seq") != 1 or first_entry.get("event") != "board":
        problems.append("the board's log has no first 'board' entry")
    elif logged != published:
        problems.append(f"the board's first log entry commits to {logged}, the board publishes {published}")
    counts = {}
    for scenario_id, scenario_hash, _ in keys:
        counts[(scenario_id, scenario_hash)] = counts.get((scenario_id, scenario_hash), 0) + 1
    listed = {(s.get("scenario_id"), s.get("scenario_hash")): s.get("seeds") for s in hidden.get("scenarios", [])}
    if counts != listed:
        problems.append("the revealed keys are not the hidden scenarios' seeds the board lists (ids, hashes, counts)")
    if len({tuple(k) for k in keys}) != len(keys):
        problems.append("a revealed key repeats")
    return CommitmentCheck(name, published, problems)


def check_commitment(url, board):
    """Check board ``board`` of the service at ``url`` (``ember service check-commitment``): a ``CommitmentCheck``."""
    import httpx

    from .client import check_url

    base = str(check_url(url)).rstrip("/")
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            answer = http.get(f"/api/boards/{board}")
            log = http.get(f"/api/boards/{board}/log", params={"limit": 1})
    except httpx.HTTPError as exc:
        raise ServiceError(f"{url}: {exc}") from None
    if answer.status_code != 200 or log.status_code != 200:
        raise ServiceError(f"{url}: board {board}: HTTP {answer.status_code} (log: HTTP {log.status_code})")
    try:
        lines = log.content.splitlines()
        first = json.loads(lines[0]) if lines else None
        public = answer.json()
    except ValueError as exc:
        raise ServiceError(f"{url}: board {board}: not JSON: {exc}") from None
    # Outside the parse: its ServiceError (not revealed yet, no hidden track) is a ValueError too.
    return check_board_commitment(public, first)


def ranked_jobs(connection, board_id):
    """The hidden track's ranked jobs: each team's latest ``done`` job per policy name, in the order they ended.

    A list of (team, policy, job id).
    """
    j = tables.jobs.c
    found = connection.execute(
        sa.select(j.id, j.policy, j.done_at, tables.teams.c.name.label("team"))
        .join(tables.teams, tables.teams.c.id == j.team_id)
        .where(j.board_id == board_id, j.state == "done")
        .order_by(j.done_at, j.id)
    ).all()
    latest = {}
    for job in found:
        latest.pop((job.team, job.policy), None)
        latest[(job.team, job.policy)] = job.id
    return [(team, policy, job_id) for (team, policy), job_id in latest.items()]


def secret_keys(connection, board_id):
    data = connection.execute(
        sa.select(tables.boards.c.hidden_secret).where(tables.boards.c.id == board_id)
    ).scalar_one()
    return json.loads(bytes(data))["keys"]
