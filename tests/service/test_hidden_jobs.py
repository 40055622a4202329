"""Hidden-track jobs under faults and on a cluster (service.md §6, §8): real servers, SIGKILL, real Dask.

A server SIGKILLed in the middle of a job finishes it on restart: every
episode has exactly one row and one ``hidden_row`` entry, and the rows
are those of an uninterrupted run on the revealed seeds (but the wall
time).  ``serve --scheduler`` runs the job on a real ``dask scheduler``
and ``dask worker``.
"""

import hashlib
import inspect
import json
import os

import httpx
import pytest

from helpers.bundles import python_bundle
from helpers.dask_processes import dask_processes
from helpers.hidden import HiddenService, rerun_locally, wait_served, without_elapsed
from helpers.service import ember

#: The walker of helpers/bundles.py, slowed where it makes its policy: a job of 4 episodes takes seconds.
SLOW_POLICY = """
import time


def make_policy(scenario):
    time.sleep(1.5)

    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}

    return policy
"""


#: The walker, writing a terminal escape and a bidi override on its stderr when it makes its policy.
LOUD_POLICY = """
import sys


def make_policy(scenario):
    print("\\x1b[31mred\\u202eflipped", file=sys.stderr, flush=True)

    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}

    return policy
"""


@pytest.fixture
def hidden():
    made = HiddenService(hidden_seeds=4, teams=("alpha",))
    yield made
    made.close()


def revealed_rows(hidden):
    ember("service", "board", "reveal", hidden.data, "office")
    version = httpx.get(f"{hidden.server.url}/api/boards/office").json()["version"]
    episodes = wait_served(hidden.server, "/api/boards/office/hidden/episodes.jsonl", version=version)
    return episodes.content.splitlines()


def test_a_server_killed_mid_job_finishes_it_on_restart_with_every_row_once(hidden):
    server = hidden.serve()
    bundle = python_bundle(os.path.join(hidden.root, "slow.tar.gz"), policy=SLOW_POLICY)
    job = hidden.submit("alpha", bundle)
    midway = hidden.wait_job("alpha", job, until=lambda status: 1 <= status["done"] < status["total"])
    assert midway["state"] == "running"
    server.kill()
    restarted = hidden.serve()
    status = hidden.wait_job("alpha", job)
    assert (status["state"], status["done"], status["total"], status["failures"]) == ("done", 4, 4, []), status
    (owner,) = hidden.database_rows("SELECT owner FROM jobs WHERE id = :job", job=job)[0]
    assert owner.split(":")[1] == str(restarted.process.pid)  # the restarted server resumed it
    lines = revealed_rows(hidden)
    log = [json.loads(line) for line in httpx.get(f"{restarted.url}/api/boards/office/log").text.splitlines()]
    entries = [entry for entry in log if entry["event"] == "hidden_row"]
    assert len(entries) == 4 and len({entry["row_sha256"] for entry in entries}) == 4
    assert sorted(hashlib.sha256(line).hexdigest() for line in lines) == sorted(e["row_sha256"] for e in entries)
    rows = [json.loads(line) for line in lines]
    keys = hidden.secret()["keys"]
    assert sorted(row["seed"] for row in rows) == sorted(key[2] for key in keys)  # each episode once
    again = rerun_locally(hidden, keys, bundle, "alpha.walker")
    assert sorted(map(json.dumps, again)) == sorted(json.dumps(without_elapsed(row)) for row in rows)


def test_serve_with_a_scheduler_runs_the_job_on_the_dask_cluster(hidden, tmp_path):
    with dask_processes(tmp_path / "dask", workers=1) as cluster:
        hidden.serve(extra=["--scheduler", cluster.address])
        job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "p.tar.gz"), policy=LOUD_POLICY))
        status = hidden.wait_job("alpha", job)
        assert (status["state"], status["done"], status["failures"]) == ("done", 4, []), status
        executed = worker_tasks(cluster.address)
    assert executed >= 1  # the episodes ran as tasks of the cluster's worker
    rows = [json.loads(line) for line in revealed_rows(hidden)]
    assert len(rows) == 4 and all(row["status"] == "ok" for row in rows)
    # Its own stderr after the reveal, escaped (isolation.md §3): one line per episode, never the raw controls.
    status = hidden.job("alpha", job).json()
    assert status["stderr_tail"] == ["\\x1b[31mred\\u202eflipped"] * 4, status["stderr_tail"]


def worker_tasks(address):
    """How many tasks the cluster's workers have run, in all."""
    from distributed import Client

    with Client(address, set_as_default=False, timeout=60) as client:
        counts = client.run(lambda dask_worker: dask_worker.state.executed_count)
    return sum(counts.values())


def test_the_evaluator_commits_each_row_as_it_is_written_reading_the_directory_twice(hidden, monkeypatch):
    """In the ``serve`` parent's evaluator (here in this process, on a job made without a server), the rows
    reach the database as the campaign writes them: the results directory is read once when the first row
    arrives and once at the end, however many episodes, and the rows are those of the directory, in its order.
    """
    import ember.results
    from ember.service.boards import load_board
    from ember.service.hidden import jobs
    from ember.service.hidden.bundles import check_bundle
    from ember.service.hidden.evaluator import Evaluator
    from ember.service.registry import open_service, team_of_token

    config, db = open_service(hidden.data)
    try:
        with db.transaction(read=True) as connection:
            board = load_board(connection, "office")
            team = team_of_token(connection, hidden.tokens["alpha"])
        path = python_bundle(os.path.join(hidden.root, "slow.tar.gz"), policy=SLOW_POLICY)
        manifest, _ = check_bundle(path, "alpha", config.board_limits("office"))
        job = jobs.create(config, db, board, team, path, manifest)
        evaluator = Evaluator(config, db, workers=1, poll_s=0.2)
        assert jobs.claim(db, evaluator.owner, evaluator.lease_s) == job
        reads = []  # the evaluator's readings of the directory (evaluate reads it once more, for its summary)
        read_results = ember.results.read_results

        def counted(*args, **options):
            if inspect.currentframe().f_back.f_globals["__name__"] == Evaluator.__module__:
                reads.append(args[0])
            return read_results(*args, **options)

        monkeypatch.setattr(ember.results, "read_results", counted)
        seen = []  # the job's episodes.jsonl as each row is committed
        episodes = os.path.join(jobs.JobFiles(config, job).results, "episodes.jsonl")
        commit = evaluator._commit
        monkeypatch.setattr(evaluator, "_commit", lambda *a: seen.append(_read(episodes)) or commit(*a))
        evaluator.run_job(job)
        assert hidden.database_rows("SELECT state FROM jobs WHERE id = :job", job=job) == [("done",)]
        assert len(seen) == 4 and len(reads) == 2  # four rows committed; the directory read twice in all
        assert seen[0].count(b"\n") < 4  # the first committed while the campaign ran
        committed = [bytes(row) + b"\n" for (row,) in hidden.database_rows("SELECT row FROM hidden_rows ORDER BY id")]
        assert b"".join(committed) == seen[-1]  # the directory's rows, byte for byte, in its order
    finally:
        db.dispose()


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_a_job_is_done_in_the_transaction_of_its_last_row(hidden, monkeypatch):
    """The hidden leaderboard ranks done jobs and a board's version moves with its log entries only: the job
    becomes done with its last row's entry, so the files derived at that version rank it (a job done after
    its last entry would be missing from them until the board's next entry).  Its evaluator then finishes
    its run and leaves the job as it is."""
    from ember.service.boards import load_board
    from ember.service.hidden import jobs
    from ember.service.hidden.bundles import check_bundle
    from ember.service.hidden.evaluator import Evaluator
    from ember.service.registry import open_service, team_of_token

    config, db = open_service(hidden.data)
    try:
        with db.transaction(read=True) as connection:
            board = load_board(connection, "office")
            team = team_of_token(connection, hidden.tokens["alpha"])
        path = python_bundle(os.path.join(hidden.root, "walker.tar.gz"))
        manifest, _ = check_bundle(path, "alpha", config.board_limits("office"))
        job = jobs.create(config, db, board, team, path, manifest)
        evaluator = Evaluator(config, db, workers=1, poll_s=0.2)
        assert jobs.claim(db, evaluator.owner, evaluator.lease_s) == job
        after = []  # (rows of the job, its state, its done_at) after each row's transaction
        commit = evaluator._commit

        def observed(*args):
            commit(*args)
            [(rows,)] = hidden.database_rows("SELECT count(*) FROM hidden_rows WHERE job_id = :job", job=job)
            [(state, done_at)] = hidden.database_rows("SELECT state, done_at FROM jobs WHERE id = :job", job=job)
            after.append((rows, state, done_at))

        monkeypatch.setattr(evaluator, "_commit", observed)
        evaluator.run_job(job)
        states = [(rows, state) for rows, state, _ in after]
        assert states == [(1, "running"), (2, "running"), (3, "running"), (4, "done")]
        query = "SELECT state, done_at, error FROM jobs WHERE id = :job"
        [(state, done_at, error)] = hidden.database_rows(query, job=job)
        assert (state, done_at, error) == ("done", after[-1][2], None)  # the end of its run changed nothing
        assert not os.path.exists(jobs.JobFiles(config, job).folder)  # and its working folder is gone
    finally:
        db.dispose()
