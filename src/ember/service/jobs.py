"""Hidden-track jobs in the database (service.md §3, §6): create, claim with a lease, report to their team.

A job is one bundle of one team for one board.  ``create`` takes it (one
job per team at a time, ``jobs_per_day`` per team per board per UTC day,
none after the reveal), ``claim`` gives a queued job, or one whose
evaluator is gone, to one evaluator (``owner``, ``lease_until``), and
``status`` is what its team sees: totals and failures, its own stderr
tail, never a seed, a record or another log line.

Its files live in ``DATA/jobs/<id>/``: the bundle as sent, ``agent/`` (the
unpacked bundle: the campaign folder the sandbox's policy sees, and
``ember-job.toml``, the campaign file it never sees) and ``results/``.
"""

import datetime
import json
import os
import shutil
import socket
import uuid

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..errors import ServiceRefusal
from ..results.layout import log_file
from . import audit, tables

JOBS_DIR = "jobs"
BUNDLE_FILE = "bundle.tar.gz"
AGENT_DIR = "agent"
CAMPAIGN_NAME = "ember-job.toml"
RESULTS_NAME = "results"
SCENARIOS_NAME = "hidden-scenarios"  # the hidden scenarios' files, which the campaign file names
ACTIVE = ("queued", "running")
STDERR_LINES = 20
TOTALS = ("episodes", "casualties", "stranded", "evacuated")
RETRY_AFTER = {"Retry-After": "60"}


def jobs_root(config):
    return os.path.join(config.data, JOBS_DIR)


class JobFiles:
    """The paths of one job's files (``DATA/jobs/<id>/...``)."""

    def __init__(self, config, job_id):
        self.folder = os.path.join(jobs_root(config), job_id)
        self.bundle = os.path.join(self.folder, BUNDLE_FILE)
        self.agent = os.path.join(self.folder, AGENT_DIR)
        self.campaign = os.path.join(self.agent, CAMPAIGN_NAME)
        self.results = os.path.join(self.folder, RESULTS_NAME)

    def stderr(self, policy, scenario_id, seed):
        return os.path.join(self.results, log_file(policy, scenario_id, seed, "stderr"))


def owner_name():
    """This evaluator's name in a lease: host, process id and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _gone(owner):
    """True when ``owner`` names a process of this host that no longer runs (its lease need not be waited out)."""
    host, _, rest = (owner or "").partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _later(seconds):
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def create(config, db, board, team, upload, manifest):
    """A new queued job for the checked bundle at ``upload`` (moved into the job's folder); returns its id."""
    job_id = str(uuid.uuid4())
    files = JobFiles(config, job_id)
    # The operator's alone: the sandbox reaches its bundle copy (agent/) only through its bind (service.md §9).
    os.makedirs(jobs_root(config), mode=0o700, exist_ok=True)
    os.makedirs(files.folder, mode=0o700)
    os.replace(upload, files.bundle)
    limits = config.board_limits(board.name)
    c = tables.jobs.c
    try:
        with db.transaction() as connection:
            locked = audit.lock_board(connection, board.id)
            hidden = json.loads(bytes(locked.hidden)) if locked.hidden is not None else {}
            if hidden.get("revealed") is not None:
                raise ServiceRefusal(409, f"board {board.name}: the hidden track is revealed; it takes no new bundle")
            busy = connection.execute(sa.select(c.id).where(c.team_id == team.id, c.state.in_(ACTIVE))).scalar()
            if busy is not None:
                raise ServiceRefusal(
                    429, f"team {team.name} has a job queued or running ({busy}): one at a time", {"id": busy},
                    RETRY_AFTER,
                )  # fmt: skip
            today = connection.execute(
                sa.select(sa.func.count())
                .select_from(tables.jobs)
                .where(c.board_id == board.id, c.team_id == team.id, c.created_at.startswith(audit.now()[:10]))
            ).scalar_one()
            if today >= limits.jobs_per_day:
                raise ServiceRefusal(
                    429, f"team {team.name} sent {today} bundles to this board today (the limit)", headers=RETRY_AFTER
                )
            connection.execute(
                sa.insert(tables.jobs).values(
                    id=job_id, board_id=board.id, team_id=team.id, policy=manifest.name, state="queued",
                    bundle=os.path.relpath(files.bundle, config.data), created_at=audit.now(),
                    manifest=canonical_json_reference(manifest.as_dict()),
                )
            )  # fmt: skip
    except BaseException:
        shutil.rmtree(files.folder, ignore_errors=True)
        raise
    return job_id


def find(connection, job_id, team=None):
    """The job (with its team's and board's names); 404 unknown, 403 another team's."""
    try:
        uuid.UUID(job_id, version=4)
    except (ValueError, AttributeError, TypeError):
        raise ServiceRefusal(404, "no such job") from None
    j = tables.jobs
    found = connection.execute(
        sa.select(j, tables.teams.c.name.label("team"), tables.boards.c.name.label("board"))
        .join(tables.teams, tables.teams.c.id == j.c.team_id)
        .join(tables.boards, tables.boards.c.id == j.c.board_id)
        .where(j.c.id == job_id)
    ).first()
    if found is None:
        raise ServiceRefusal(404, "no such job")
    if team is not None and found.team_id != team.id:
        raise ServiceRefusal(403, "this job belongs to another team")
    return found


# -- claiming -----------------------------------------------------------------------------------


def claim(db, owner, lease_s):
    """The oldest job that is queued, or running under a lease that expired or whose evaluator is gone, now
    leased to ``owner``; None when there is none."""
    c = tables.jobs.c
    with db.transaction() as connection:
        candidates = connection.execute(
            sa.select(c.id, c.state, c.owner, c.lease_until).where(c.state.in_(ACTIVE)).order_by(c.created_at, c.id)
        ).all()
        now = audit.now()
        for job in candidates:
            free = job.state == "queued" or job.lease_until is None or job.lease_until < now or _gone(job.owner)
            if not free:
                continue
            same_owner = c.owner.is_(None) if job.owner is None else c.owner == job.owner
            taken = connection.execute(
                sa.update(tables.jobs)
                .where(c.id == job.id, c.state == job.state, same_owner)
                .values(state="running", owner=owner, lease_until=_later(lease_s))
            )
            if taken.rowcount == 1:
                return job.id
    return None


def renew(db, job_id, owner, lease_s):
    """Extend ``owner``'s lease; False when the job is no longer its own (another evaluator took it over)."""
    c = tables.jobs.c
    with db.transaction() as connection:
        done = connection.execute(
            sa.update(tables.jobs)
            .where(c.id == job_id, c.owner == owner, c.state == "running")
            .values(lease_until=_later(lease_s))
        )
        return done.rowcount == 1


def finish(db, job_id, owner, state, error=None):
    """The job ``done`` or ``failed`` (with its reason), if it is still ``owner``'s."""
    c = tables.jobs.c
    with db.transaction() as connection:
        connection.execute(
            sa.update(tables.jobs)
            .where(c.id == job_id, c.owner == owner)
            .values(state=state, error=error, done_at=audit.now(), lease_until=None)
        )


def running_on(connection, board_id):
    """The ids of the board's jobs queued or running."""
    c = tables.jobs.c
    return list(connection.execute(sa.select(c.id).where(c.board_id == board_id, c.state.in_(ACTIVE))).scalars())


# -- what the team sees -------------------------------------------------------------------------

_ESCAPED = {0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def escape_foreign(text):
    """isolation.md §3: C0, DEL and C1 controls as ``\\xNN``; line and paragraph separators and bidi controls as
    ``\\uNNNN``."""
    out = []
    for char in text:
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif code in _ESCAPED:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def _redact(text, seeds):
    """``text`` with every secret seed's decimal digits replaced: a team never reads a seed, whoever wrote it."""
    for seed in sorted(seeds, key=lambda s: -len(str(s))):
        text = text.replace(str(seed), "<seed>")
    return text


def _stderr_tail(files, policy, keys, seeds):
    lines = []
    for scenario_id, seed in keys:
        try:
            with open(files.stderr(policy, scenario_id, seed), "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - 64 * 1024))
                lines += handle.read().decode("utf-8", "replace").splitlines()[-STDERR_LINES:]
        except FileNotFoundError:
            continue
        lines = lines[-STDERR_LINES:]
    return [escape_foreign(_redact(line, seeds)) for line in lines]


def status(config, db, job, board):
    """``GET /api/jobs/{id}``'s JSON (service.md §3)."""
    r = tables.hidden_rows.c
    with db.transaction(read=True) as connection:
        found = connection.execute(
            sa.select(r.scenario_id, r.seed, r.row).where(r.job_id == job.id).order_by(r.seq)
        ).all()
        secret = connection.execute(
            sa.select(tables.boards.c.hidden_secret).where(tables.boards.c.id == board.id)
        ).scalar_one()
    seeds = {key[2] for key in json.loads(bytes(secret))["keys"]} if secret is not None else set()
    per = {s.scenario_id: dict.fromkeys(TOTALS, 0) for s in board.hidden_scenarios}
    failures = []
    for item in found:
        row = json.loads(bytes(item.row))
        totals = per.setdefault(item.scenario_id, dict.fromkeys(TOTALS, 0))
        totals["episodes"] += 1
        if row["status"] == "ok":
            safety = row["metrics"]["safety"]
            for key in ("casualties", "stranded", "evacuated"):
                totals[key] += safety[key]
        else:
            failures.append({"scenario_id": item.scenario_id, "error": escape_foreign(_redact(row["error"], seeds))})
    if job.state == "failed" and job.error:
        failures.append({"scenario_id": None, "error": escape_foreign(_redact(job.error, seeds))})
    policy = f"{job.team}.{job.policy}"
    keys = sorted((item.scenario_id, item.seed) for item in found)
    return {
        "id": job.id,
        "state": job.state,
        "done": len(found),
        "total": sum(s.seeds for s in board.hidden_scenarios),
        "scenarios": [{"scenario_id": name, **totals} for name, totals in per.items()],
        "failures": failures,
        "stderr_tail": _stderr_tail(JobFiles(config, job.id), policy, keys, seeds),
    }
