"""Hidden-track jobs in the database (service.md §3, §6, §9): create, claim with a lease, report to their team.

A job is one bundle of one team for one board, on one key set: ``create``
takes a live one (one job per team at a time, ``jobs_per_day`` per team
per board per UTC day, none once the reveal has begun), the reveal makes
the final ones (``create_final``: the same bundle on the final keys),
``claim`` gives a queued job, or one whose evaluator is gone, to one
evaluator (``owner``, ``lease_until``), and ``status`` is what its team
sees: before the reveal its totals and failures as EMBER's fixed reasons
only (nothing the bundle wrote: no stderr, no exception or answer text);
after it, also its own stderr tail and the full reasons.

The bundle as sent is kept in ``DATA/bundles/<job id>.tar.gz`` (the reveal
runs it again on the final keys).  A job's working files live in
``DATA/jobs/<id>/``: ``agent/`` (the unpacked bundle: the campaign folder
the sandbox's policy sees, and ``ember-job.toml``, the campaign file it
never sees) and ``results/``; the folder is removed once the job's rows
are committed (``remove_folder``), each row keeping its episode's stderr
tail (at most ``STDERR_KEPT`` bytes) in the database.
"""

import contextlib
import json
import os
import re
import shutil
import uuid

import sqlalchemy as sa

from ...canonical import canonical_json_reference
from ...results.layout import log_file
from .. import audit, tables
from ..config import TMP_DIR
from ..errors import ServiceRefusal, retry_after
from ..leases import gone, holder_name, later
from ..owned import find_owned

JOBS_DIR = "jobs"
BUNDLES_DIR = "bundles"
BUNDLE_SUFFIX = ".tar.gz"
AGENT_DIR = "agent"
CAMPAIGN_NAME = "ember-job.toml"
RESULTS_NAME = "results"
SCENARIOS_NAME = "hidden-scenarios"  # the hidden scenarios' files, which the campaign file names
ACTIVE = ("queued", "running")
STDERR_LINES = 20
STDERR_KEPT = 64 * 1024  # bytes of an episode's stderr kept in the database, its end
TOTALS = ("episodes", "casualties", "stranded", "evacuated")
#: A team waits for its job (a day's bundles, one job at a time) in minutes, not seconds.
RETRY_AFTER = retry_after(60)


def jobs_root(config):
    return os.path.join(config.shared, JOBS_DIR)


def bundle_uploads(config):
    """DATA/jobs/tmp: the bundles still streaming in, each to a file of its own."""
    return os.path.join(jobs_root(config), TMP_DIR)


def bundle_path(config, job_id):
    return os.path.join(config.shared, BUNDLES_DIR, job_id + BUNDLE_SUFFIX)


def bundle_file(config, job):
    """The file of a job's kept bundle: its ``bundle`` column is relative to the shared store (DATA without one),
    so every host finds it."""
    return os.path.join(config.shared, job.bundle)


class JobFiles:
    """The paths of one job's working files (``DATA/jobs/<id>/...``)."""

    def __init__(self, config, job_id):
        self.folder = os.path.join(jobs_root(config), job_id)
        self.agent = os.path.join(self.folder, AGENT_DIR)
        self.campaign = os.path.join(self.agent, CAMPAIGN_NAME)
        self.results = os.path.join(self.folder, RESULTS_NAME)
        self.total = None  # how many keys the job runs on, once its campaign file is written

    def stderr(self, policy, scenario_id, seed):
        return os.path.join(self.results, log_file(policy, scenario_id, seed, "stderr"))


#: This evaluator's name in a lease: host, process id and a random part.
owner_name = holder_name


def create(config, db, board, team, upload, manifest):
    """A new queued job for the checked bundle at ``upload`` (moved into the job's folder); returns its id."""
    job_id = str(uuid.uuid4())
    bundle = bundle_path(config, job_id)
    os.makedirs(os.path.dirname(bundle), mode=0o700, exist_ok=True)
    os.replace(upload, bundle)
    limits = config.board_limits(board.name)
    c = tables.jobs.c
    try:
        with db.transaction() as connection:
            locked = audit.lock_board(connection, board.id)
            hidden = json.loads(bytes(locked.hidden)) if locked.hidden is not None else {}
            if hidden.get("revealed") is not None:
                raise ServiceRefusal(409, f"board {board.name}: the hidden track is revealed; it takes no new bundle")
            if locked.hidden_state is not None:
                raise ServiceRefusal(
                    409, f"board {board.name}: the hidden track is being revealed; it takes no new bundle"
                )
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
                    429, f"team {team.name} sent {today} bundles to this board today (the limit; it resets at "
                    "00:00 UTC)", headers=audit.until_tomorrow(),
                )  # fmt: skip
            connection.execute(
                sa.insert(tables.jobs).values(
                    id=job_id, board_id=board.id, team_id=team.id, policy=manifest.name, state="queued",
                    bundle=os.path.relpath(bundle, config.shared), created_at=audit.now(),
                    manifest=canonical_json_reference(manifest.as_dict()), key_set="live",
                )
            )  # fmt: skip
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(bundle)
        raise
    return job_id


def create_final(connection, board_id, team_id, policy, origin):
    """A queued final job: live job ``origin``'s bundle on the final keys (the reveal makes them)."""
    c = tables.jobs.c
    found = connection.execute(sa.select(c.bundle, c.manifest).where(c.id == origin)).one()
    job_id = str(uuid.uuid4())
    connection.execute(
        sa.insert(tables.jobs).values(
            id=job_id, board_id=board_id, team_id=team_id, policy=policy, state="queued", bundle=found.bundle,
            created_at=audit.now(), manifest=found.manifest, key_set="final", origin=origin,
        )
    )  # fmt: skip
    return job_id


def remove_folder(config, db, job_id):
    """The job's working folder removed (its rows are committed, with their stderr tails).

    A job made before bundles were kept apart has its bundle in that folder: it is moved to
    ``DATA/bundles/`` first (the reveal runs it again), and every job naming it follows.
    """
    folder = JobFiles(config, job_id).folder
    c = tables.jobs.c
    with db.transaction() as connection:
        inside = connection.execute(
            sa.select(c.bundle)
            .where(c.bundle.startswith(os.path.relpath(folder, config.shared) + os.sep, autoescape=True))
            .distinct()
        ).scalars()
        for old in list(inside):
            kept = bundle_path(config, job_id)
            if os.path.exists(os.path.join(config.shared, old)):
                os.makedirs(os.path.dirname(kept), mode=0o700, exist_ok=True)
                os.replace(os.path.join(config.shared, old), kept)
            connection.execute(
                sa.update(tables.jobs).where(c.bundle == old).values(bundle=os.path.relpath(kept, config.shared))
            )
    shutil.rmtree(folder, ignore_errors=True)


def find(connection, job_id, team=None):
    """The job (with its team's and board's names); 404 unknown, 403 another team's."""
    return find_owned(connection, tables.jobs, job_id, team, "job")


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
            free = job.state == "queued" or job.lease_until is None or job.lease_until < now or gone(job.owner)
            if not free:
                continue
            same_owner = c.owner.is_(None) if job.owner is None else c.owner == job.owner
            taken = connection.execute(
                sa.update(tables.jobs)
                .where(c.id == job.id, c.state == job.state, same_owner)
                .values(state="running", owner=owner, lease_until=later(lease_s))
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
            .values(lease_until=later(lease_s))
        )
        return done.rowcount == 1 or _ended_by(connection, job_id, owner)


def finish(db, job_id, owner, state, error=None):
    """The job ``done`` or ``failed`` (with its reason), if it is still ``owner``'s: True when it was.  A job
    its last row already ended (``end_with_last_row``) stays as it ended: its rows are all there."""
    c = tables.jobs.c
    with db.transaction() as connection:
        done = connection.execute(
            sa.update(tables.jobs)
            .where(c.id == job_id, c.owner == owner, c.state != "done")
            .values(state=state, error=error, done_at=audit.now(), lease_until=None)
        )
        return done.rowcount == 1 or _ended_by(connection, job_id, owner)


def end_with_last_row(connection, job_id, owner, total):
    """In the transaction that commits a job's row: the job ``done`` when it now has a row for each of its
    ``total`` keys.  The hidden leaderboard ranks done jobs, and the board's version moves with log entries
    only, so the job becomes done with the entry of its last row: a board version's derived files never miss
    a job that had every row at that version."""
    if total is None:
        return  # no campaign file yet: no row can have come
    c, r = tables.jobs.c, tables.hidden_rows.c
    rows = connection.execute(sa.select(sa.func.count()).select_from(tables.hidden_rows).where(r.job_id == job_id))
    if rows.scalar_one() < total:
        return
    connection.execute(
        sa.update(tables.jobs)
        .where(c.id == job_id, c.owner == owner, c.state == "running")
        .values(state="done", error=None, done_at=audit.now(), lease_until=None)
    )


def _ended_by(connection, job_id, owner):
    """True when ``owner``'s job was ended by its last row (its evaluator still finishes its run)."""
    c = tables.jobs.c
    found = connection.execute(sa.select(c.state, c.owner).where(c.id == job_id)).first()
    return found is not None and found.state == "done" and found.owner == owner


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


#: EMBER's fixed reasons for a failure (service.md §9), and the phrases of EMBER's own sentences that say
#: each.  The earliest phrase in a reason wins: EMBER's words come first, the policy's (if any) after them.
FIXED_REASONS = {
    "could not be made": ("could not be made", "cannot start"),
    "raised": ("policy raised",),
    "timed out": ("did not answer within", "did not end within"),
    "exceeded its memory limit": ("exceeded its memory limit",),
    "illegal action": ("illegal action", "not JSON", "not UTF-8", "not a JSON object"),
    "answer too long": ("answer is longer than",),
    "exited": ("exited with status", "was killed by", "closed its standard output", "before answering"),
}
_PHRASES = re.compile("|".join(re.escape(p) for phrases in FIXED_REASONS.values() for p in phrases))
_REASON_OF = {phrase: reason for reason, phrases in FIXED_REASONS.items() for phrase in phrases}


def fixed_reason(text, default="exited"):
    """The fixed reason a failure's text says (``default`` when it says none of them): never the policy's words."""
    found = _PHRASES.search(text or "")
    return default if found is None else _REASON_OF[found.group(0)]


def stderr_tail(data):
    """The last ``STDERR_KEPT`` bytes of an episode's stderr, cut at a line start when one is in them."""
    if len(data) <= STDERR_KEPT:
        return data
    cut = data.find(b"\n", len(data) - STDERR_KEPT - 1)  # from the byte before the tail: it may end a line
    return data[cut + 1 :] if 0 <= cut < len(data) - 1 else data[-STDERR_KEPT:]


def _tail_lines(stderrs):
    lines = []
    for data in stderrs:
        if data:
            lines += bytes(data).decode("utf-8", "replace").splitlines()[-STDERR_LINES:]
            lines = lines[-STDERR_LINES:]
    return [escape_foreign(line) for line in lines]


def status(config, db, job, board):
    """``GET /api/jobs/{id}``'s JSON (service.md §3, §9); 404 for a final job before the reveal."""
    r = tables.hidden_rows.c
    chosen = job.key_set or "live"
    revealed = board.revealed
    if chosen == "final" and not revealed:
        raise ServiceRefusal(404, "no such job")
    with db.transaction(read=True) as connection:
        found = connection.execute(
            sa.select(r.scenario_id, r.seed, r.row, r.stderr).where(r.job_id == job.id).order_by(r.seq, r.id)
        ).all()
    counted = [s for s in board.hidden_scenarios if getattr(s, chosen)]
    per = {s.scenario_id: dict.fromkeys(TOTALS, 0) for s in counted}
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
            error = escape_foreign(row["error"]) if revealed else fixed_reason(row["error"])
            failures.append({"scenario_id": item.scenario_id, "error": error})
    if job.state == "failed" and job.error:
        error = escape_foreign(job.error) if revealed else fixed_reason(job.error, "could not be made")
        failures.append({"scenario_id": None, "error": error})
    answer = {
        "id": job.id,
        "state": job.state,
        "done": len(found),
        "total": sum(getattr(s, chosen) for s in board.hidden_scenarios),
        "scenarios": [{"scenario_id": name, **totals} for name, totals in per.items()],
        "failures": failures,
    }
    if revealed:
        ordered = sorted(found, key=lambda item: (item.scenario_id, item.seed))
        answer["stderr_tail"] = _tail_lines(item.stderr for item in ordered)
    return answer
