"""The hidden track's evaluator (service.md §6): the ``serve`` parent's thread that runs jobs as campaigns.

A job is run as a campaign of the board's hidden scenarios, with the
secret seeds of its key set (a team's job: live; a job of the reveal:
final; service.md §9), and the bundle as its one policy ``TEAM.NAME`` under
isolation.md ``required`` (``ember.campaign.evaluate`` itself, local
workers or the Dask cluster of ``--scheduler``), into the job's own
results directory with its records kept.  While it runs every row it
writes is handed over as it is written (the first together with those a
killed server's run wrote before it, read once from the directory), and
at the end the directory is read once more; each new row is committed with its
``hidden_row`` entry (``row`` null, ``row_sha256``; a final row's entry
waits for the reveal), its episode's stderr tail and its record moved
into the record store, in one transaction per row; the ``hidden_rows``
table holds one row per episode of a job.  A server killed at any moment
resumes the job on restart: the campaign's resume runs only the episodes
without a row, and the rows already written are committed if they were
not.  The job is leased (``owner``, ``lease_until``, renewed every third
of the lease), so however many servers share the database, exactly one
evaluator runs a job at a time.  A job that ended has its working folder
removed; the last final job of a reveal completes it (``secrecy.complete_reveal``).
"""

import contextlib
import fcntl
import json
import os
import queue
import shlex
import shutil
import sys
import threading
import traceback

import sqlalchemy as sa

from ...canonical import one_line
from ...errors import EmberError
from ...files import replace_file
from ...results.log import row_sha256
from .. import audit, tables
from ..boards import load_board
from ..registry import FINAL, LIVE
from ..rounds import every_round
from ..store import RecordStore
from . import jobs
from .bundles import extract_bundle
from .secrecy import complete_reveal, keys_of

SANDBOX = "required"
_COPY = 1 << 20


def campaign_text(board_name, scenarios, keys, policy):
    """The job's campaign file: the hidden scenarios (files beside the job) with their secret seeds of the
    job's set (``keys``: (scenario_id, scenario_hash, seed)), one policy; a scenario without one is left out."""
    import tomli_w

    seeds = {}
    for scenario_id, _, seed in keys:
        seeds.setdefault(scenario_id, []).append(seed)
    value = {
        "campaign": board_name,
        "scenarios": [
            {"source": f"../{jobs.SCENARIOS_NAME}/{s.scenario_id}.json", "seeds": sorted(seeds[s.scenario_id])}
            for s in scenarios
            if s.scenario_id in seeds
        ],
        "policies": [policy],
    }
    return tomli_w.dumps(value)


def policy_entry(name, manifest, agent_folder):
    """The campaign's policy entry of a bundle's manifest (campaign.md §2, isolation.md §2's keys)."""
    entry = {"name": name}
    if manifest.get("agent") is not None:
        entry["agent"] = shlex.join(manifest["agent"])
        # The sandbox binds the bundle's own files: every top-level entry of it, the campaign file excepted.
        entry["files"] = sorted(n for n in os.listdir(agent_folder) if n != jobs.CAMPAIGN_NAME)
    else:
        entry["python"] = manifest["python"]
    for key in ("step_timeout", "memory_mb", "episode_timeout"):
        if manifest.get(key) is not None:
            entry[key] = manifest[key]
    return entry


class Evaluator:
    """Claims jobs and runs them, one at a time, until ``stop`` is set."""

    def __init__(self, config, db, scheduler=None, workers=None, poll_s=1.0):
        self.config = config
        self.db = db
        self.scheduler = scheduler
        self.workers = workers
        self.poll_s = poll_s
        self.owner = jobs.owner_name()
        self.lease_s = config.limits.job_lease_s
        self.store = RecordStore(config.records)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ember-evaluator", daemon=True)

    def start(self):
        self.thread.start()

    def run(self):
        every_round(self.stop, self.poll_s, self.round, "the hidden jobs' loop")

    def round(self):
        """One job claimed and run (then the next at once), or none queued (the next look after ``poll_s``)."""
        job_id = jobs.claim(self.db, self.owner, self.lease_s)
        if job_id is None:
            return None
        self.run_job(job_id)  # a failure leaves the job's lease to run out: claimed again, by this host or another
        return 0

    # -- one job ----------------------------------------------------------------------------

    def _read(self, job_id):
        with self.db.transaction(read=True) as connection:
            job = jobs.find(connection, job_id)
            board = load_board(connection, job.board)
            secret = connection.execute(
                sa.select(tables.boards.c.hidden_secret).where(tables.boards.c.id == board.id)
            ).scalar_one()
        return job, board, json.loads(bytes(secret))

    def prepare(self, job, board, secret):
        """The job's files: the bundle unpacked (once), the scenarios and the campaign file (every time: the same)."""
        files = jobs.JobFiles(self.config, job.id)
        root = jobs.jobs_root(self.config)
        # The operator's alone (service.md §9): the sandbox's mounts are made with the service's rights, so the
        # sandbox's uid reaches its bundle copy through its bind only, never through these folders.
        os.makedirs(root, mode=0o700, exist_ok=True)
        os.makedirs(files.folder, mode=0o700, exist_ok=True)
        if not os.path.isdir(files.agent):
            partial = files.agent + ".part"
            shutil.rmtree(partial, ignore_errors=True)
            extract_bundle(jobs.bundle_file(self.config, job), partial)
            os.rename(partial, files.agent)
        scenarios = os.path.join(files.folder, jobs.SCENARIOS_NAME)
        os.makedirs(scenarios, mode=0o700, exist_ok=True)
        for s in board.hidden_scenarios:
            with open(os.path.join(scenarios, f"{s.scenario_id}.json"), "wb") as handle:
                handle.write(s.data + b"\n")
        policy = policy_entry(f"{job.team}.{job.policy}", json.loads(bytes(job.manifest)), files.agent)
        keys = self.keys(job, secret)
        files.total = len(keys)
        text = campaign_text(board.name, board.hidden_scenarios, keys, policy)
        replace_file(files.campaign, text.encode("utf-8"), mode=0o600)
        return files

    @staticmethod
    def keys(job, secret):
        """The keys the job runs on: its set's (a job made before sets existed: live)."""
        return keys_of(secret["keys"], job.key_set or LIVE)

    def run_job(self, job_id):
        job, board, secret = self._read(job_id)
        try:
            self._run_job(job, board, secret)
        finally:
            if job.key_set == FINAL:
                with contextlib.suppress(EmberError):
                    complete_reveal(self.db, board.id)  # the last final job publishes the reveal

    def _finish(self, job, state, error=None):
        """The job ended: its state, then (its rows and stderr tails being in the database) its folder gone."""
        if jobs.finish(self.db, job.id, self.owner, state, error):
            jobs.remove_folder(self.config, self.db, job.id)

    def _run_job(self, job, board, secret):
        from ...campaign.driver import evaluate

        job_id = job.id
        if not self.keys(job, secret):
            self._finish(job, "done")  # the board has no key of this set: nothing to run
            return
        lost = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job_id, lost), daemon=True)
        beat.start()
        outcome = {}
        arriving = ArrivingRows()
        try:
            files = self.prepare(job, board, secret)
            lock = self._lock(files, lost)
            if lock is None:
                return  # the lease was lost while an earlier evaluator's run still held the job's folder

            def campaign():
                try:
                    outcome["summary"] = evaluate(
                        files.campaign, files.results, workers=self.workers, scheduler=self.scheduler,
                        keep_records=True, sandbox=SANDBOX, rows=arriving.put,
                    )  # fmt: skip
                except BaseException as exc:  # noqa: BLE001 (reported as the job's failure)
                    outcome["error"] = exc
                finally:
                    os.close(lock)  # held while this run lasts, even after its lease was lost

            worker = threading.Thread(target=campaign, name="ember-job", daemon=True)
            worker.start()
            while worker.is_alive() and not lost.is_set():
                worker.join(self.poll_s)
                self.commit_arrived(job, board, files, arriving)
            if lost.is_set():
                return  # another evaluator holds the job now; this one's rows are in the same directory
            self.commit_rows(job, board, files)
            error = outcome.get("error")
            summary = outcome.get("summary")
            if error is None and summary.missing:
                self._finish(job, "failed", f"{summary.missing} episodes have no row")
            elif error is None:
                self._finish(job, "done")
            elif isinstance(error, EmberError):
                self._finish(job, "failed", one_line(error))
            else:
                # EMBER's own failure: the operator reads it on the server's stderr, the team only its name.
                traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
                self._finish(job, "failed", f"the evaluation stopped: {type(error).__name__}")
        except EmberError as exc:
            with contextlib.suppress(EmberError):
                self._finish(job, "failed", one_line(exc))
        except OSError as exc:
            with contextlib.suppress(EmberError):
                self._finish(job, "failed", f"the job's files: {exc.strerror or exc}")
        finally:
            lost.set()

    def _lock(self, files, lost):
        """The job folder's lock (a descriptor), waited for while the lease holds; None once it is lost.

        An evaluator whose lease was taken over may still be running the job's campaign: the new owner waits
        for that run to end rather than start a second one on the same results directory.
        """
        fd = os.open(os.path.join(files.folder, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        while not lost.is_set():
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                lost.wait(self.poll_s)
        os.close(fd)
        return None

    def _heartbeat(self, job_id, lost):
        while not lost.wait(self.lease_s / 3):
            try:
                if not jobs.renew(self.db, job_id, self.owner, self.lease_s):
                    lost.set()
            except EmberError:
                continue  # the database is down: the lease runs on until it answers again

    # -- rows -------------------------------------------------------------------------------

    def commit_rows(self, job, board, files):
        """Commit every row of the job's results directory not in the database yet; returns the keys of the
        job's rows in the database, or None when the directory cannot be read (not made yet, or being made)."""
        from ...results import read_results

        counting = CountingValues()
        try:
            read_results(files.results, consumers=(counting,))
        except (EmberError, OSError):
            return None
        r = tables.hidden_rows.c
        with self.db.transaction(read=True) as connection:
            have = {
                (item.scenario_id, item.seed)
                for item in connection.execute(sa.select(r.scenario_id, r.seed).where(r.job_id == job.id))
            }
        for row in counting.values():
            self._commit_new(job, board, files, row, have)
        return have

    def commit_arrived(self, job, board, files, arriving):
        """Commit the rows the campaign wrote since the last call, in the order it wrote them.  The first rows
        to arrive are committed with those written before them (a resumed job's) from one reading of the
        results directory, in its order; from then on each row as it came, without reading the directory."""
        arriving.pending += arriving.taken()
        if not arriving.pending:
            return
        if arriving.committed is None:
            arriving.committed = self.commit_rows(job, board, files)
            if arriving.committed is None:
                return  # the rows wait for the next round
        for row in arriving.pending:
            self._commit_new(job, board, files, row, arriving.committed)
        arriving.pending = []

    def _commit_new(self, job, board, files, row, have):
        """Commit ``row`` unless its key is in ``have`` (the keys committed), which it then joins."""
        key = (row["scenario_id"], row["seed"])
        if key in have:
            return
        stored = None
        if row["record"] is not None:
            stored = self._store(os.path.join(files.results, *row["record"].split("/")), row["record_sha256"])
        self._commit(job, board, row, stored, self._stderr(files, job, row), files.total)
        have.add(key)

    @staticmethod
    def _stderr(files, job, row):
        """The end of the episode's stderr (``jobs.STDERR_KEPT`` bytes at most), or None when it wrote none."""
        try:
            with open(files.stderr(f"{job.team}.{job.policy}", row["scenario_id"], row["seed"]), "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - jobs.STDERR_KEPT - 1))
                data = handle.read()
        except FileNotFoundError:
            return None
        return jobs.stderr_tail(data) if size > jobs.STDERR_KEPT else data

    def _store(self, path, sha256):
        temporary = self.store.temporary()
        try:
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(_COPY), b""):
                    temporary.write(block)
            return temporary.commit(sha256)
        except BaseException:
            temporary.discard()
            raise

    def _commit(self, job, board, row, stored, stderr, total):
        from ...canonical import canonical_json_reference

        line = canonical_json_reference(row)
        digest = row_sha256(row, line)
        with self.db.transaction() as connection:
            locked = audit.lock_board(connection, board.id)
            r = tables.hidden_rows.c
            exists = connection.execute(
                sa.select(r.id).where(r.job_id == job.id, r.scenario_id == row["scenario_id"], r.seed == row["seed"])
            ).first()
            if exists is not None:
                return
            seq = None
            if job.key_set != FINAL:
                # A final row's entry waits for the reveal (secrecy.publish): before it, not even its time is told.
                seq = locked.append(
                    "hidden_row", team=job.team, policy=job.policy, row=None,
                    row_sha256=digest, data={"job": job.id, "set": LIVE},
                )  # fmt: skip
            connection.execute(
                sa.insert(tables.hidden_rows).values(
                    job_id=job.id, scenario_id=row["scenario_id"], seed=row["seed"],
                    row=line, row_sha256=digest, record_sha256=row["record_sha256"],
                    stored=stored, seq=seq, stderr=stderr,
                )
            )  # fmt: skip
            jobs.end_with_last_row(connection, job.id, self.owner, total)


class ArrivingRows:
    """The rows a job's campaign writes, handed over as they come: ``put`` (the campaign's thread), ``taken``
    (the evaluator's); ``pending`` are taken and not committed yet, ``committed`` the keys in the database
    once they were read."""

    def __init__(self):
        self.queue = queue.SimpleQueue()
        self.pending = []
        self.committed = None

    def put(self, row):
        self.queue.put(row)

    def taken(self):
        found = []
        while True:
            try:
                found.append(self.queue.get_nowait())
            except queue.Empty:
                return found


class CountingValues:
    """A results reader's consumer: each (policy, episode key)'s counting row (its last), as the row's value.

    ``values()`` lists them in the file order of those last rows.
    """

    def __init__(self):
        self.by_key = {}  # (policy, episode key) -> (line, row value)

    def add(self, row):
        self.by_key[row.policy, row.key] = (row.line, row.value)

    def values(self):
        return [value for _, value in sorted(self.by_key.values(), key=lambda found: found[0])]
