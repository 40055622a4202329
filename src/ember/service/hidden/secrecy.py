"""The hidden track's secrecy (service.md §6, §9): the reveal, the commitment check, the ranked jobs.

Until the reveal the keys (scenario, hash, secret seed, and on a board
made with ``{live, final}`` seeds its set) and the salt stay in
``boards.hidden_secret``, which nothing serves; the board's public JSON
and first log entry carry only their ``commitment``.  Jobs run on the
live keys.  ``reveal`` (refused while a job of the board is queued or
running) first closes the board to bundles (``hidden_state`` =
``closed``), then queues one final job per ranked bundle (each team's
latest done live job per policy name) on the final keys; the ``serve``
evaluator runs them with leases like any job, and once none is left
``publish`` appends, in one transaction, a ``hidden_row`` entry for every
final row (their entries are held back until then: not even their times
say anything of the final keys) and the ``reveal`` entry, and puts keys
and salt in the board's JSON.  A board without final keys (or without a
ranked bundle) is published at once.  ``check_commitment`` is what anyone
can run against a service: the commitment recomputed from the revealed
keys and salt, and compared with the one the board published and logged
first.
"""

import json

import sqlalchemy as sa

from ...canonical import canonical_json_reference
from ...errors import ServiceError
from .. import audit, tables
from ..registry import FINAL, KEY_SETS, LIVE, commitment_of
from . import jobs

CLOSED = "closed"


def key_set(key):
    """The set of a key: its fourth element, or ``live`` for an untagged (1.0) key."""
    return key[3] if len(key) == 4 else LIVE


def keys_of(keys, chosen):
    """The keys of set ``chosen`` as (scenario_id, scenario_hash, seed)."""
    return [tuple(key[:3]) for key in keys if key_set(key) == chosen]


def set_scenarios(board, keys):
    """A key set's campaign: the hidden scenarios of ``board`` with a key in ``keys`` (``keys_of``'s), in board
    order, each with its seeds of those keys ascending, as (``BoardScenario``, seeds).  The export and the
    bounds of a set both take its episodes from here, so they cover the same keys in the same order."""
    seeds = {}
    for scenario_id, _, seed in keys:
        seeds.setdefault(scenario_id, []).append(seed)
    return [(s, sorted(seeds[s.scenario_id])) for s in board.hidden_scenarios if s.scenario_id in seeds]


class RevealState:
    """Where a board's reveal stands: ``revealed`` (keys, salt and rows published), ``keys`` (how many),
    ``final_jobs`` (queued by the reveal) and ``finished`` (of those, done or failed)."""

    def __init__(self, revealed, keys, final_jobs, finished):
        self.revealed = revealed
        self.keys = keys
        self.final_jobs = final_jobs
        self.finished = finished


def _final_jobs(connection, board_id):
    c = tables.jobs.c
    return connection.execute(
        sa.select(c.id, c.state).where(c.board_id == board_id, c.key_set == FINAL).order_by(c.created_at, c.id)
    ).all()


def reveal(db, name):
    """Reveal board ``name``'s hidden track (service.md §9); returns a ``RevealState``.

    The first call closes the board to bundles and queues the final jobs (refused while a job runs); when
    there is nothing to run it publishes at once.  A later call reports how far the final jobs are.
    """
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
        secret = json.loads(bytes(board.hidden_secret))
        if board.hidden_state != CLOSED:
            busy = jobs.running_on(connection, board.id)
            if busy:
                raise ServiceError(f"board {name!r}: job {busy[0]} is queued or running; reveal when no job runs")
            connection.execute(
                sa.update(tables.boards).where(tables.boards.c.id == board.id).values(hidden_state=CLOSED)
            )
            if keys_of(secret["keys"], FINAL):
                for team_id, policy, job_id in ranked_job_rows(connection, board.id, LIVE):
                    jobs.create_final(connection, board.id, team_id, policy, job_id)
        final = _final_jobs(connection, board.id)
        finished = sum(1 for job in final if job.state not in jobs.ACTIVE)
        if finished == len(final):
            publish(connection, board, secret)
            return RevealState(True, len(secret["keys"]), len(final), finished)
    return RevealState(False, len(secret["keys"]), len(final), finished)


def complete_reveal(db, board_id):
    """Publish the board's hidden track if its reveal has begun and no final job is left; True when it did."""
    with db.transaction() as connection:
        board = audit.lock_board(connection, board_id)
        if board.hidden is None or board.hidden_state != CLOSED:
            return False
        if json.loads(bytes(board.hidden)).get("revealed") is not None:
            return False
        if any(job.state in jobs.ACTIVE for job in _final_jobs(connection, board_id)):
            return False
        publish(connection, board, json.loads(bytes(board.hidden_secret)))
        return True


def publish(connection, board, secret):
    # ``board``: the transaction's ``audit.LockedBoard``.
    """Keys, salt and every hidden row at once: the held-back final rows' ``hidden_row`` entries (in the order
    their jobs were made, each job's rows in the order they were committed), then the ``reveal`` entry."""
    r, j = tables.hidden_rows.c, tables.jobs.c
    held = connection.execute(
        sa.select(r.id, r.row_sha256, j.id.label("job"), j.policy, tables.teams.c.name.label("team"))
        .join(tables.jobs, j.id == r.job_id)
        .join(tables.teams, tables.teams.c.id == j.team_id)
        .where(j.board_id == board.id, r.seq.is_(None))
        .order_by(j.created_at, j.id, r.id)
    ).all()
    for item in held:
        seq = board.append(
            "hidden_row", team=item.team, policy=item.policy, row=None,
            row_sha256=item.row_sha256, data={"job": item.job, "set": FINAL},
        )  # fmt: skip
        connection.execute(sa.update(tables.hidden_rows).where(r.id == item.id).values(seq=seq))
    hidden = json.loads(bytes(board.hidden))
    hidden["revealed"] = secret
    connection.execute(
        sa.update(tables.boards).where(tables.boards.c.id == board.id).values(hidden=canonical_json_reference(hidden))
    )
    board.append("reveal", data=secret)


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
        isinstance(k, list) and len(k) in (3, 4) and isinstance(k[0], str) and isinstance(k[1], str)
        and type(k[2]) is int and 0 <= k[2] < 2**63 and (len(k) == 3 or k[3] in KEY_SETS)
        for k in keys
    ):  # fmt: skip
        raise ServiceError(
            f"board {name!r}: revealed.keys: expected [[scenario_id, scenario_hash, seed] or [..., seed, set], ...]"
        )
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
    tagged = any(len(k) == 4 for k in keys)
    if tagged and not all(len(k) == 4 for k in keys):
        problems.append("the revealed keys mix tagged [..., seed, set] and untagged [..., seed] keys")
    counts = {}
    for key in keys:
        place = (key[0], key[1])
        if tagged:
            found = counts.setdefault(place, dict.fromkeys(KEY_SETS, 0))
            found[key_set(key)] += 1
        else:
            counts[place] = counts.get(place, 0) + 1
    listed = {(s.get("scenario_id"), s.get("scenario_hash")): s.get("seeds") for s in hidden.get("scenarios", [])}
    if counts != listed:
        problems.append("the revealed keys are not the hidden scenarios' seeds the board lists (ids, hashes, counts)")
    if tagged:
        for place in counts:
            seeds = sorted((k[2], key_set(k)) for k in keys if (k[0], k[1]) == place)
            sets = [chosen for _, chosen in seeds]
            if sets != sorted(sets, key=KEY_SETS.index):
                problems.append(f"scenario {place[0]}: a live seed is above a final one (the first L are live)")
    if len({tuple(k[:3]) for k in keys}) != len(keys):
        problems.append("a revealed key repeats")
    return CommitmentCheck(name, published, problems)


def check_commitment(url, board):
    """Check board ``board`` of the service at ``url`` (``ember service check-commitment``): a ``CommitmentCheck``."""
    import httpx

    from ..client import check_url

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


def ranked_job_rows(connection, board_id, chosen=LIVE):
    """Each team's latest ``done`` job of set ``chosen`` per policy name, in the order they ended: a list of
    (team id, policy, job id).  A job made before key sets existed is a live one."""
    j = tables.jobs.c
    in_set = sa.or_(j.key_set == LIVE, j.key_set.is_(None)) if chosen == LIVE else j.key_set == chosen
    found = connection.execute(
        sa.select(j.id, j.policy, j.team_id, j.done_at)
        .where(j.board_id == board_id, j.state == "done", in_set)
        .order_by(j.done_at, j.id)
    ).all()
    latest = {}
    for job in found:
        latest.pop((job.team_id, job.policy), None)
        latest[(job.team_id, job.policy)] = job.id
    return [(team, policy, job_id) for (team, policy), job_id in latest.items()]


def ranked_jobs(connection, board_id, chosen=LIVE):
    """The hidden track's ranked jobs of set ``chosen``: a list of (team, policy, job id), in the order they
    ended."""
    names = dict(connection.execute(sa.select(tables.teams.c.id, tables.teams.c.name)).all())
    return [(names[team], policy, job) for team, policy, job in ranked_job_rows(connection, board_id, chosen)]


def secret_keys(connection, board_id):
    data = connection.execute(
        sa.select(tables.boards.c.hidden_secret).where(tables.boards.c.id == board_id)
    ).scalar_one()
    return json.loads(bytes(data))["keys"]


def revealed_record(connection, digest):
    """The stored name of a record of a revealed hidden row, or None."""
    r, j = tables.hidden_rows.c, tables.jobs.c
    found = connection.execute(
        sa.select(r.stored, j.board_id).join(tables.jobs, j.id == r.job_id).where(r.record_sha256 == digest)
    ).all()
    for item in found:
        if item.stored is not None and revealed(connection, item.board_id):
            return item.stored
    return None
