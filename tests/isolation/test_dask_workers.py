"""A ``required`` sandbox on a Dask cluster (isolation.md §2, Dask): the command checks every worker first.

One of two real ``dask worker`` processes runs where bubblewrap is not
installed (its own mount namespace, ``/usr/bin/bwrap`` covered by
``/dev/null``, as on a machine without the package): the campaign exits 2
before any episode runs, naming that worker and ``--sandbox off``, and
writes no row.
"""

import os
import shutil

import pytest

from helpers.campaigns import ember_cli, write_campaign
from helpers.dask_processes import dask_processes, without_bwrap

POLICY = """
from ember.sim.policies import GreedyPolicy


def make(scenario):
    return GreedyPolicy(scenario)
"""

CAMPAIGN = """
campaign = "dask-sandbox"
seeds = [0, 1]
scenarios = ["builtin:office"]

[[policies]]
name = "walker"
python = "walker:make"
"""


def test_a_worker_that_cannot_make_the_sandbox_stops_the_campaign_before_it_runs(tmp_path):
    pytest.importorskip("distributed")
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("bwrap") is None:
        pytest.fail("this test hides bubblewrap from one worker with unshare --mount: it runs as root (as CI does)")
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "walker.py").write_text(POLICY)
    path = write_campaign(folder, CAMPAIGN)
    results = tmp_path / "results"
    with dask_processes(tmp_path / "cluster", workers=2, wrap=without_bwrap) as cluster:
        from distributed import Client

        with Client(cluster.address, set_as_default=False) as client:
            by_pid = {pid: address for address, pid in client.run(os.getpid).items()}
        blind = by_pid[cluster.workers[1].pid]
        seeing = by_pid[cluster.workers[0].pid]
        done = ember_cli("evaluate", path, "-o", results, "--scheduler", cluster.address, timeout=300)
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1, lines
    assert blind in lines[0] and seeing not in lines[0], lines[0]
    assert "bubblewrap" in lines[0] and "--sandbox off" in lines[0], lines[0]
    assert not os.path.exists(results / "episodes.jsonl")
