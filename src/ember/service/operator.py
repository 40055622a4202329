"""The operator's commands on a running board (service.md §9, "Operators can act"): what is there (``list``),
and the acts, each one log entry: a submission withdrawn (``operator_withdraw``), a team disabled
(``team_disable``), a job run again (``job_rerun``).

Only commands on the machine that holds DATA call these (the operator is trusted: a listing shows a job's
full failure reason).  A listing is (columns, rows), rows of plain values, for the CLI to print as a table
or as JSON.
"""

import os

import sqlalchemy as sa

from ..errors import ServiceError
from . import audit, submissions, tables
from .boards import load_board
from .errors import ServiceRefusal
from .hidden.jobs import ACTIVE
from .hidden.secrecy import revealed
from .owned import with_names

LISTS = ("boards", "teams", "submissions", "jobs")


def listing(db, what, board=None):
    """(columns, rows) of ``what`` (one of ``LISTS``), oldest first; ``board`` keeps one board's."""
    if what not in LISTS:
        raise ServiceError(f"list {what!r}: expected one of {', '.join(LISTS)}")
    with db.transaction(read=True) as connection:
        board_id = None
        if board is not None:
            found = load_board(connection, board)
            if found is None:
                raise ServiceError(f"board {board!r}: no such board")
            board_id = found.id
        return _LISTINGS[what](connection, board_id)


def _boards(connection, board_id):
    b, s, sc = tables.boards.c, tables.submissions.c, tables.scenarios.c
    query = sa.select(b.id, b.name, b.version, b.created_at, b.hidden, b.opens, b.closes, b.reveal_at)
    query = query.order_by(b.created_at, b.id)
    if board_id is not None:
        query = query.where(b.id == board_id)
    rows = []
    for board in connection.execute(query).all():
        counted = connection.execute(
            sa.select(sa.func.count(), sa.func.count(sa.distinct(s.team_id))).where(
                s.board_id == board.id, s.state == "closed"
            )
        ).one()
        scenarios = connection.execute(
            sa.select(sa.func.count()).where(sc.board_id == board.id, sc.track == "open")
        ).scalar_one()
        hidden = "no" if board.hidden is None else ("revealed" if revealed(connection, board.id) else "yes")
        rows.append([
            board.name, board.version, scenarios, counted[0], counted[1], hidden, board.created_at, board.opens,
            board.closes, board.reveal_at,
        ])  # fmt: skip
    columns = ["board", "version", "scenarios", "closed submissions", "teams", "hidden track", "created", "opens"]
    return [*columns, "closes", "reveal at"], rows


def _teams(connection, board_id):
    t, k = tables.teams.c, tables.tokens.c
    rows = []
    for team in connection.execute(sa.select(tables.teams).order_by(t.created_at, t.id)).all():
        made = _count_of_team(connection, tables.submissions, team.id, board_id)
        jobs = _count_of_team(connection, tables.jobs, team.id, board_id)
        if board_id is not None and not made and not jobs:
            continue
        tokens = connection.execute(
            sa.select(sa.func.count()).where(k.team_id == team.id, k.revoked_at.is_(None))
        ).scalar_one()
        state = "disabled" if team.disabled_at is not None else "active"
        rows.append([team.name, state, tokens, made, jobs, team.created_at])
    return ["team", "state", "live tokens", "submissions", "jobs", "created"], rows


def _count_of_team(connection, table, team_id, board_id):
    """How many rows of ``table`` (submissions, jobs) are the team's, on board ``board_id`` when it is given."""
    c = table.c
    where = [c.team_id == team_id] + ([c.board_id == board_id] if board_id is not None else [])
    return connection.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()


def _listed(table, board_id, *columns):
    """The select of ``table``'s rows (submissions, jobs), oldest first, board ``board_id``'s when it is given:
    each row's id, its board's and its team's names (``board``, ``team``), then ``columns``."""
    c = table.c
    query = with_names(table, c.id, *columns).order_by(c.created_at, c.id)
    return query if board_id is None else query.where(c.board_id == board_id)


def _submissions(connection, board_id):
    s, r = tables.submissions.c, tables.rows.c
    columns = (s.policy, s.state, s.created_at, s.closed_at, sa.func.count(r.id).label("rows"))
    query = (
        _listed(tables.submissions, board_id, *columns)
        .outerjoin(tables.rows, r.submission_id == s.id)
        .group_by(s.id, tables.boards.c.name, tables.teams.c.name)
    )
    rows = [
        [x.id, x.board, x.team, x.policy, x.state, x.rows, x.created_at, x.closed_at]
        for x in connection.execute(query).all()
    ]
    return ["id", "board", "team", "policy", "state", "rows", "created", "closed"], rows


def _jobs(connection, board_id):
    j = tables.jobs.c
    query = _listed(tables.jobs, board_id, j.policy, j.key_set, j.state, j.created_at, j.done_at, j.error, j.origin)
    rows = [
        [x.id, x.board, x.team, x.policy, x.key_set or "live", x.state, x.created_at, x.done_at, x.error, x.origin]
        for x in connection.execute(query).all()
    ]
    return ["id", "board", "team", "policy", "set", "state", "created", "done", "error", "runs again"], rows


_LISTINGS = {"boards": _boards, "teams": _teams, "submissions": _submissions, "jobs": _jobs}


# -- acts ---------------------------------------------------------------------------------


def withdraw(db, submission_id):
    """The operator withdraws a submission (any state but withdrawn): ``operator_withdraw`` on its board."""
    with db.transaction(read=True) as connection:
        found = _refused_as_error(lambda: submissions.find(connection, submission_id))
        board = load_board(connection, found.board)
    _refused_as_error(
        lambda: submissions.withdraw(db, board, found, event="operator_withdraw", data={"submission": found.id})
    )
    return found


def disable_team(db, name):
    """Team ``name`` disabled: its tokens stop working (now, on every server process: each request looks its
    token up), its closed submissions stay ranked.  One ``team_disable`` entry on every board."""
    t = tables.teams.c
    with db.transaction() as connection:
        team = connection.execute(sa.select(tables.teams).where(t.name == name).with_for_update()).first()
        if team is None:
            raise ServiceError(f"team {name!r}: no such team")
        if team.disabled_at is not None:
            raise ServiceError(f"team {name!r}: disabled already (at {team.disabled_at})")
        connection.execute(sa.update(tables.teams).where(t.id == team.id).values(disabled_at=audit.now()))
        boards = connection.execute(sa.select(tables.boards.c.id).order_by(tables.boards.c.id)).scalars().all()
        for board_id in boards:
            audit.append(connection, board_id, "team_disable", team=name, data={"team": name})
    return len(boards)


def rerun_job(config, db, job_id):
    """A new queued job for job ``job_id``'s bundle on the same keys: its id.  The old job's rows and entries
    stay; the hidden ranking takes each team's latest done job per policy name.  One ``job_rerun`` entry.

    Refused for a job still queued or running, a bundle no longer kept, a final job (its id is secret until
    the reveal publishes it) and a board whose hidden track is revealed (its ranking is published).
    """
    import uuid

    j = tables.jobs.c
    with db.transaction() as connection:
        job = connection.execute(sa.select(tables.jobs).where(j.id == job_id)).first() if _uuid(job_id) else None
        if job is None:
            raise ServiceError(f"job {job_id!r}: no such job")
        if job.state in ACTIVE:
            raise ServiceError(f"job {job_id}: {job.state}; only a job that ended can run again")
        if job.key_set == "final":
            raise ServiceError(f"job {job_id}: a final job; the reveal runs final jobs (its id stays secret till then)")
        board = audit.lock_board(connection, job.board_id)
        if revealed(connection, board.id) or board.hidden_state is not None:
            raise ServiceError(f"job {job_id}: board {board.name}'s hidden track is revealed or being revealed")
        if not os.path.isfile(os.path.join(config.shared, job.bundle)):
            raise ServiceError(f"job {job_id}: its bundle is no longer kept ({job.bundle})")
        team = connection.execute(sa.select(tables.teams.c.name).where(tables.teams.c.id == job.team_id)).scalar_one()
        new = str(uuid.uuid4())
        connection.execute(
            sa.insert(tables.jobs).values(
                id=new, board_id=job.board_id, team_id=job.team_id, policy=job.policy, state="queued",
                bundle=job.bundle, created_at=audit.now(), manifest=job.manifest, key_set=job.key_set,
            )
        )  # fmt: skip
        data = {"job": job.id, "new_job": new}
        board.append("job_rerun", team=team, policy=job.policy, data=data)
    return new


def _uuid(text):
    import uuid

    try:
        uuid.UUID(text, version=4)
    except (ValueError, AttributeError, TypeError):
        return False
    return True


def _refused_as_error(call):
    """An HTTP refusal (404, 409) said as the command's error."""
    try:
        return call()
    except ServiceRefusal as exc:
        raise ServiceError(str(exc)) from None
