"""Submissions and their rows in the database (service.md §3, §4): create, status, accept, close, withdraw.

Every change that the board shows is one transaction with its audit
entry; the uniqueness of (submission, scenario, seed) in the ``rows``
table is what keeps two server processes from accepting two records for
one key (the second insert fails, and its upload is answered as a
re-upload: 200 when it is the same record, 409 otherwise).

An episode's upload (``receive_episode``) is checked against the path and the submission, verified as it
streams in a verifying process of its own (``uploads``), and accepted by ``accept``.
"""

import asyncio
import json
import os
import re
import uuid

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..results.layout import RECORDS_DIR, episode_folder
from ..results.log import row_sha256
from ..results.rows import ok_row
from . import audit, phases, tables
from .boards import compiled_scenario
from .errors import CLOSE, ServiceRefusal
from .owned import find_owned
from .responses import COUNT, threaded
from .uploads.body import body_chunks
from .uploads.verifier import VerifyingProcess

POLICY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_POLICY = 64
MAX_DESCRIPTION = 200
MAX_LINK = 300
#: An absolute http or https URL of RFC 3986's characters: a host (and port), no user part (a page shows it
#: as a link, so nothing in it needs escaping but ``&`` and ``'``).
LINK_PATTERN = re.compile(r"(?i:https?)://[A-Za-z0-9.:\[\]-]+(?:[/?#][A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]*)?")


def make_row(scenario, seed, policy, metrics, record, record_sha256, elapsed_s):
    """The row of campaign.md §4 of an accepted record (for policy ``TEAM.NAME``), by the one row constructor."""
    return ok_row(
        scenario_id=scenario.scenario_id, scenario_hash=scenario.scenario_hash, seed=seed, policy=policy,
        metrics=metrics, record=record, record_sha256=record_sha256, elapsed_s=elapsed_s,
    )  # fmt: skip


def record_path(policy, scenario_id, seed, suffix):
    """The row's ``record``: ``records/TEAM.NAME/<scenario_id>/<seed>`` and the stored file's suffix."""
    return os.path.join(episode_folder(RECORDS_DIR, policy, scenario_id), f"{seed}{suffix}")


def _today():
    return audit.now()[:10]


def check_about(description, link):
    """A submission's ``description`` (one line of printable text, at most ``MAX_DESCRIPTION`` characters) and
    ``link`` (an http or https URL, at most ``MAX_LINK``), each optional (None); 400 naming the field."""
    if description is not None:
        if not isinstance(description, str) or not description.strip():
            raise ServiceRefusal(400, f"$.description: expected a line of text, got {description!r:.80}")
        if len(description) > MAX_DESCRIPTION:
            raise ServiceRefusal(
                400, f"$.description: expected at most {MAX_DESCRIPTION} characters, got {len(description)}"
            )
        if not description.isprintable():
            raise ServiceRefusal(400, "$.description: expected one line of printable text (no newline or control)")
    if link is not None:
        if not isinstance(link, str) or not LINK_PATTERN.fullmatch(link):
            raise ServiceRefusal(400, f"$.link: expected an http:// or https:// URL, got {link!r:.80}")
        if len(link) > MAX_LINK:
            raise ServiceRefusal(400, f"$.link: expected at most {MAX_LINK} characters, got {len(link)}")


def create(db, board, team, policy, per_day, description=None, link=None):
    """A new open submission of ``team`` for ``policy`` on ``board``; returns its id.  ``description`` and
    ``link``: the team's words about it (``check_about``'s)."""
    if not isinstance(policy, str) or not POLICY_PATTERN.fullmatch(policy):
        raise ServiceRefusal(422, f"$.policy: expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*, got {policy!r:.80}")
    if len(f"{team.name}.{policy}") > MAX_POLICY:
        raise ServiceRefusal(422, f"$.policy: {team.name}.{policy} is longer than {MAX_POLICY} characters")
    check_about(description, link)
    c = tables.submissions.c
    with db.transaction() as connection:
        audit.lock_board(connection, board.id)  # one creator at a time per board: the day's count holds
        found = connection.execute(
            sa.select(c.id).where(c.board_id == board.id, c.team_id == team.id, c.policy == policy)
        ).scalar()
        if found is not None:
            raise ServiceRefusal(409, f"team {team.name} already has policy {policy} on this board", {"id": found})
        # After the name's own 409 (the client finds its submission again): a board outside its phases.
        phases.refuse_outside(board)
        today = connection.execute(
            sa.select(sa.func.count())
            .select_from(tables.submissions)
            .where(c.board_id == board.id, c.team_id == team.id, c.created_at.startswith(_today()))
        ).scalar_one()
        if today >= per_day:
            raise ServiceRefusal(
                429, f"team {team.name} made {today} submissions to this board today (the limit; it resets at "
                "00:00 UTC)", headers=audit.until_tomorrow(),
            )  # fmt: skip
        submission_id = str(uuid.uuid4())
        connection.execute(
            sa.insert(tables.submissions).values(
                id=submission_id, board_id=board.id, team_id=team.id, policy=policy, state="open",
                created_at=audit.now(), description=description, link=link,
            )
        )  # fmt: skip
    return submission_id


def find(connection, submission_id, team=None):
    """The submission (joined with its team and board names); 404 unknown, 403 another team's."""
    return find_owned(connection, tables.submissions, submission_id, team, "submission")


def ranked_record(connection, digest):
    """The stored name of record ``digest`` of a closed submission's row, or None."""
    s, r = tables.submissions.c, tables.rows.c
    return connection.execute(
        sa.select(r.stored)
        .join(tables.submissions, s.id == r.submission_id)
        .where(r.record_sha256 == digest, s.state == "closed")
    ).scalar()


def accepted(connection, submission_id, scenario_id, seed):
    c = tables.rows.c
    return connection.execute(
        sa.select(c.row, c.record_sha256, c.stored).where(
            c.submission_id == submission_id, c.scenario_id == scenario_id, c.seed == seed
        )
    ).first()


def status(db, board, submission):
    """``GET /api/submissions/{id}``'s JSON."""
    with db.transaction(read=True) as connection:
        c = tables.rows.c
        done = connection.execute(
            sa.select(c.scenario_id, c.seed, c.row).where(c.submission_id == submission.id).order_by(c.seq)
        ).all()
        r = tables.refusals.c
        refused = connection.execute(
            sa.select(r.scenario_id, r.seed, r.message).where(r.submission_id == submission.id)
        ).all()
    have = {(row.scenario_id, row.seed) for row in done}
    return {
        "id": submission.id,
        "team": submission.team,
        "policy": submission.policy,
        "board": board.name,
        "state": submission.state,
        "description": submission.description,
        "link": submission.link,
        "done": [[sid, seed] for sid, seed in board.episode_keys() if (sid, seed) in have],
        "missing": [[sid, seed] for sid, seed in board.episode_keys() if (sid, seed) not in have],
        "rows": [json.loads(bytes(row.row)) for row in done],
        "refusals": [
            {"scenario_id": row.scenario_id, "seed": row.seed, "error": row.message}
            for row in sorted(refused, key=lambda row: (row.scenario_id, row.seed))
        ],
    }


def refuse(db, submission, scenario_id, seed, message):
    """Keep ``message`` as the key's last refusal."""
    r = tables.refusals.c
    with db.transaction() as connection:
        connection.execute(
            sa.delete(tables.refusals).where(
                r.submission_id == submission.id, r.scenario_id == scenario_id, r.seed == seed
            )
        )
        connection.execute(
            sa.insert(tables.refusals).values(
                submission_id=submission.id, scenario_id=scenario_id, seed=seed, message=message, at=audit.now()
            )
        )


def must_be_open(state, headers=None):
    """Refuse (409) adding to a submission in ``state`` unless it is open."""
    if state != "open":
        raise ServiceRefusal(409, f"the submission is {state}: nothing can be added to it", headers=headers)


def _must_be_open(connection, submission_id):
    must_be_open(
        connection.execute(
            sa.select(tables.submissions.c.state).where(tables.submissions.c.id == submission_id)
        ).scalar_one()
    )


def accept(db, board, submission, row, stored):
    """Commit an accepted row, its ``row`` entry and the record's ownership in one transaction; returns
    (status, row dict).

    (201, row) when new; (200, the stored row) when this key holds the same record already; 409 when it
    holds another, when another team's submission (open or closed) owns this record on the board (a
    copy), or when the submission is no longer open.
    """
    line = canonical_json_reference(row)
    key = (row["scenario_id"], row["seed"])
    sha256 = row["record_sha256"]
    try:
        with db.transaction() as connection:
            locked = audit.lock_board(connection, board.id)
            _must_be_open(connection, submission.id)
            existing = accepted(connection, submission.id, *key)
            if existing is None:
                owner = _owner(connection, board.id, sha256)
                if owner is None:
                    connection.execute(
                        sa.insert(tables.record_owners).values(
                            board_id=board.id, record_sha256=sha256, submission_id=submission.id
                        )
                    )
                elif owner.team_id != submission.team_id:
                    raise ServiceRefusal(409, f"a copy of a record accepted for {owner.team}.{owner.policy}")
                seq = locked.append(
                    "row", team=submission.team, policy=submission.policy, row=row,
                    row_sha256=row_sha256(row, line),
                )  # fmt: skip
                connection.execute(
                    sa.insert(tables.rows).values(
                        submission_id=submission.id, scenario_id=key[0], seed=key[1], row=line,
                        record_sha256=sha256, stored=stored, seq=seq,
                    )
                )  # fmt: skip
                return 201, row
    except sa.exc.IntegrityError:
        with db.transaction(read=True) as connection:
            existing = accepted(connection, submission.id, *key)
            owner = _owner(connection, board.id, sha256)
        if existing is None and owner is not None and owner.team_id != submission.team_id:
            raise ServiceRefusal(409, f"a copy of a record accepted for {owner.team}.{owner.policy}") from None
        if existing is None:
            raise
    return same_record(existing, sha256, key)


def _owner(connection, board_id, sha256):
    """The submission (its team id, team name and policy) that owns record ``sha256`` on the board, or None."""
    o, s = tables.record_owners.c, tables.submissions.c
    return connection.execute(
        sa.select(s.id, s.team_id, s.policy, tables.teams.c.name.label("team"))
        .join(tables.submissions, s.id == o.submission_id)
        .join(tables.teams, tables.teams.c.id == s.team_id)
        .where(o.board_id == board_id, o.record_sha256 == sha256)
    ).first()


def _free_records(connection, board_id, submission_id):
    """A withdrawn submission's records: each goes to the first other submission not withdrawn that holds it
    too (its team's), or is freed (another team's upload of it is then its first acceptance)."""
    o, r, s = tables.record_owners.c, tables.rows.c, tables.submissions.c
    owned = (
        connection.execute(sa.select(o.record_sha256).where(o.board_id == board_id, o.submission_id == submission_id))
        .scalars()
        .all()
    )
    for sha256 in owned:
        heir = connection.execute(
            sa.select(r.submission_id)
            .join(tables.submissions, s.id == r.submission_id)
            .where(s.board_id == board_id, s.state != "withdrawn", s.id != submission_id, r.record_sha256 == sha256)
            .order_by(r.seq)
            .limit(1)
        ).scalar()
        where = (o.board_id == board_id) & (o.record_sha256 == sha256)
        if heir is None:
            connection.execute(sa.delete(tables.record_owners).where(where))
        else:
            connection.execute(sa.update(tables.record_owners).where(where).values(submission_id=heir))


def same_record(existing, sha256, key):
    """A re-upload's answer: (200, the accepted row) for the same record, else a 409 refusal."""
    if existing.record_sha256 == sha256:
        return 200, json.loads(bytes(existing.row))
    raise ServiceRefusal(409, other_record(existing.record_sha256, key))


def other_record(sha256, key):
    """The 409's message for a record that is not the one accepted (``sha256``) for ``key``."""
    return f"another record (sha256 {sha256}) is accepted for {key[0]} seed {key[1]}"


def close(db, board, submission):
    phases.refuse_outside(board)
    with db.transaction() as connection:
        locked = audit.lock_board(connection, board.id)
        _must_be_open(connection, submission.id)
        count = connection.execute(
            sa.select(sa.func.count()).select_from(tables.rows).where(tables.rows.c.submission_id == submission.id)
        ).scalar_one()
        missing = len(board.episode_keys()) - count
        if missing:
            raise ServiceRefusal(409, f"{missing} episodes have no accepted row yet", {"missing": missing})
        at = audit.now()
        connection.execute(
            sa.update(tables.submissions)
            .where(tables.submissions.c.id == submission.id)
            .values(state="closed", closed_at=at)
        )
        locked.append("close", team=submission.team, policy=submission.policy)
    return {"id": submission.id, "state": "closed", "closed_at": at}


def withdraw(db, board, submission, event="withdraw", data=None):
    """The submission withdrawn (its rows leave the ranking, its records are freed); ``event`` and ``data``:
    the log entry (the team's ``withdraw``, or the operator's ``operator_withdraw``)."""
    with db.transaction() as connection:
        locked = audit.lock_board(connection, board.id)
        state = connection.execute(
            sa.select(tables.submissions.c.state).where(tables.submissions.c.id == submission.id)
        ).scalar_one()
        if state == "withdrawn":
            raise ServiceRefusal(409, "the submission is withdrawn already")
        connection.execute(
            sa.update(tables.submissions).where(tables.submissions.c.id == submission.id).values(state="withdrawn")
        )
        _free_records(connection, board.id, submission.id)
        locked.append(event, team=submission.team, policy=submission.policy, data=data)
    return {"id": submission.id, "state": "withdrawn"}


def listing(db, board, team=None):
    """``GET /api/boards/{board}/submissions``: closed ones; with a token, that team's others too."""
    s = tables.submissions
    query = (
        sa.select(
            s.c.id,
            s.c.policy,
            s.c.state,
            s.c.closed_at,
            s.c.team_id,
            s.c.description,
            s.c.link,
            tables.teams.c.name.label("team"),
        )  # fmt: skip
        .join(tables.teams, tables.teams.c.id == s.c.team_id)
        .where(s.c.board_id == board.id)
        .order_by(s.c.created_at, s.c.id)
    )
    with db.transaction(read=True) as connection:
        found = connection.execute(query).all()
    return [
        {
            "id": row.id,
            "team": row.team,
            "policy": row.policy,
            "state": row.state,
            "closed_at": row.closed_at,
            "description": row.description,
            "link": row.link,
        }  # fmt: skip
        for row in found
        if row.state == "closed" or (team is not None and row.team_id == team.id)
    ]


def _episode(board, scenario_id, seed_text):
    """The board scenario and seed of an upload's path; 404 when the board has no such episode."""
    scenario = board.by_id.get(scenario_id)
    if scenario is None:
        raise ServiceRefusal(404, f"board {board.name} has no scenario {scenario_id!r:.80}", headers=CLOSE)
    seed = int(seed_text) if COUNT.fullmatch(seed_text) else None
    if seed is None or seed not in scenario.seeds:
        raise ServiceRefusal(
            404, f"scenario {scenario_id} of board {board.name} has no seed {seed_text!r:.40}", headers=CLOSE
        )
    return scenario, seed


async def receive_episode(service, request, team, found, board, scenario_id, seed_text):
    """The upload of one episode's record to submission ``found`` (service.md §3): (status, row dict)."""
    loop = asyncio.get_running_loop()
    scenario, seed = _episode(board, scenario_id, seed_text)
    phases.refuse_outside(board, headers=CLOSE)
    must_be_open(found.state, headers=CLOSE)
    limits = service.limits
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limits.max_record_bytes):
        raise ServiceRefusal(413, f"the record is longer than {limits.max_record_bytes:,} bytes as sent", headers=CLOSE)
    existing = await threaded(service.accepted, found.id, scenario_id, seed)
    compiled = await threaded(compiled_scenario, scenario)
    policy = f"{found.team}.{found.policy}"
    slots = await threaded(service.slots.take, team, ("upload", "verify") if existing is None else ("upload",))
    try:
        known = None
        if existing is not None:
            message = other_record(existing.record_sha256, (scenario_id, seed))
            known = (service.store.path(existing.stored), existing.record_sha256, message)
        work = await loop.run_in_executor(
            service.pool, lambda: VerifyingProcess(service.spare, compiled, seed, limits, service.store, known)
        )
        try:
            async for chunk in body_chunks(request, limits):
                if not await loop.run_in_executor(service.pool, work.feed, chunk):
                    break  # refused, and drained as far as the limit allows
            verdict = await loop.run_in_executor(service.pool, work.finish)
            if verdict is None:
                await threaded(refuse, service.db, found, scenario_id, seed, work.refusal)
                raise ServiceRefusal(422, work.refusal, headers=CLOSE)
            metrics, sha = verdict
            if existing is not None:
                return same_record(existing, sha, (scenario_id, seed))
            stored = await loop.run_in_executor(service.pool, work.commit, sha)
        finally:
            await loop.run_in_executor(service.pool, work.discard)
        suffix = stored[stored.index(".record") :]
        record = record_path(policy, scenario_id, seed, suffix)
        row = make_row(scenario, seed, policy, metrics, record, sha, work.busy)
        return await threaded(accept, service.db, board, found, row, stored)
    finally:
        await threaded(service.slots.give_back, slots)
