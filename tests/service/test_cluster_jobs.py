"""Hidden-track jobs on the Dask cluster that ``service.toml`` names (``[evaluation] scheduler``): real ``dask
scheduler`` and ``dask worker`` processes.

The job's rows are those of local workers (but the wall time); a worker
killed by PID in the middle of the job costs its batch a run on another
worker, never a row twice or a lost episode; a worker that cannot make the
sandbox stops the job before any episode runs (every worker is checked
first, as a campaign checks them), the team told only EMBER's fixed reason.
"""

import hashlib
import json
import os
import signal

import httpx
import pytest

from helpers.bundles import python_bundle
from helpers.dask_processes import dask_processes, without_bwrap, worker_pids
from helpers.hidden import HiddenService, rerun_locally, wait_served, without_elapsed
from helpers.service import ember, wait_for

#: The walker, slowed where it makes its policy: the job's one batch of episodes takes seconds on a worker.
SLOW_POLICY = """
import time


def make_policy(scenario):
    time.sleep(1.5)

    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}

    return policy
"""

SEEDS = 4


@pytest.fixture
def hidden():
    pytest.importorskip("distributed")
    made = HiddenService(hidden_seeds=SEEDS, teams=("alpha",))
    yield made
    made.close()


def name_scheduler(hidden, address):
    """``[evaluation] scheduler = ADDRESS`` in DATA/service.toml, as an operator writes it."""
    path = os.path.join(hidden.data, "service.toml")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f'\n[evaluation]\nscheduler = "{address}"\n')


def executed(address):
    """{worker process id: tasks it has run}."""
    from distributed import Client

    with Client(address, set_as_default=False, timeout=60) as client:
        counts = client.run(lambda dask_worker: dask_worker.state.executed_count)
    pids = worker_pids(address)
    return {pids[worker]: count for worker, count in counts.items()}


def busy_worker(address):
    """The process id of a worker running a task now, or None."""
    from distributed import Client

    with Client(address, set_as_default=False, timeout=60) as client:
        processing = client.processing()
    pids = worker_pids(address)
    return next((pids[worker] for worker, keys in sorted(processing.items()) if keys and worker in pids), None)


def test_a_job_on_the_configured_cluster_loses_a_worker_mid_job_and_its_rows_are_the_local_workers(hidden, tmp_path):
    bundle = python_bundle(os.path.join(hidden.root, "slow.tar.gz"), policy=SLOW_POLICY)
    with dask_processes(tmp_path / "dask", workers=2) as cluster:
        name_scheduler(hidden, cluster.address)
        server = hidden.serve()  # no --scheduler: service.toml names the cluster
        job = hidden.submit("alpha", bundle)
        logs = os.path.join(hidden.data, "jobs", job, "results", "logs")
        # Mid-job: the batch is on a worker and its first episode has started (its stderr file is there).
        wait_for(lambda: os.path.isdir(logs) and any(files for _, _, files in os.walk(logs)), timeout=300,
                 what="the job's first episode on a worker")  # fmt: skip
        victim = wait_for(lambda: busy_worker(cluster.address), timeout=60, what="a worker running the job")
        assert hidden.job("alpha", job).json()["done"] == 0  # the batch's rows come back with it: none yet
        os.kill(victim, signal.SIGKILL)
        (killed,) = [process for process in cluster.workers if process.pid == victim]
        killed.wait(60)
        status = hidden.wait_job("alpha", job)
        ran = executed(cluster.address)
    assert killed.returncode == -signal.SIGKILL
    assert (status["state"], status["done"], status["total"], status["failures"]) == ("done", SEEDS, SEEDS, [])
    assert victim not in ran and sum(ran.values()) >= 1  # the survivor ran the lost batch again
    ember("service", "board", "reveal", hidden.data, "office")
    version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
    lines = wait_served(server, "/api/boards/office/hidden/episodes.jsonl", version=version).content.splitlines()
    log = [json.loads(line) for line in httpx.get(f"{server.url}/api/boards/office/log").text.splitlines()]
    entries = [entry for entry in log if entry["event"] == "hidden_row"]
    assert len(entries) == SEEDS and len(lines) == SEEDS  # one row and one entry per episode, none twice
    assert sorted(hashlib.sha256(line).hexdigest() for line in lines) == sorted(e["row_sha256"] for e in entries)
    stored = hidden.database_rows("SELECT scenario_id, seed FROM hidden_rows WHERE job_id = :job", job=job)
    assert len(stored) == len(set(stored)) == SEEDS
    keys = hidden.secret()["keys"]
    rows = [json.loads(line) for line in lines]
    assert sorted(row["seed"] for row in rows) == sorted(key[2] for key in keys)
    local = rerun_locally(hidden, keys, bundle, "alpha.walker")  # the same episodes on local workers
    assert sorted(map(json.dumps, local)) == sorted(json.dumps(without_elapsed(row)) for row in rows)


def test_a_cluster_worker_that_cannot_make_the_sandbox_fails_the_job_before_any_episode(hidden, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("this test hides bubblewrap from one worker with unshare --mount: it runs as root (as CI does)")
    with dask_processes(tmp_path / "dask", workers=2, wrap=without_bwrap) as cluster:
        pids = {pid: address for address, pid in worker_pids(cluster.address).items()}
        blind, seeing = pids[cluster.workers[1].pid], pids[cluster.workers[0].pid]
        name_scheduler(hidden, cluster.address)
        hidden.serve()
        job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "p.tar.gz")))
        status = hidden.wait_job("alpha", job)
        ran = executed(cluster.address)
    assert status["state"] == "failed" and status["done"] == 0, status
    assert status["failures"] == [{"scenario_id": None, "error": "could not be made"}]  # the team: a fixed reason
    assert sum(ran.values()) == 0  # no episode ran anywhere
    assert hidden.database_rows("SELECT id FROM hidden_rows WHERE job_id = :job", job=job) == []
    listed = json.loads(ember("service", "list", hidden.data, "jobs", "--format", "json").stdout)
    (reason,) = [item["error"] for item in listed if item["id"] == job]
    assert blind in reason and seeing not in reason and "bubblewrap" in reason, reason  # the operator: the worker
