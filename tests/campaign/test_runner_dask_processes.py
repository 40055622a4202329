"""The Dask runner against real ``dask scheduler`` and ``dask worker`` processes, one killed by PID mid-run.

Episodes go to Dask in batches (dask_runner.DASK_BATCH): a worker killed with a
batch in hand loses every episode of it, and each must be run again with
the same row as a local run gives.
"""

import operator
import os
import signal
import subprocess
import sys
import time

import pytest

from ember.campaign import dask_runner, evaluate
from ember.results import rows as row_module

from helpers.campaign_processes import DAEMON_POLICY, assert_daemons_ended, daemon_campaign
from helpers.campaigns import ember_cli, read_rows, wait_for, without_timing, write_campaign
from helpers.dask_processes import dask_processes
from helpers.ranking_results import assert_same

SEEDS = 40  # x 2 policies: several batches on each worker, so the kill lands mid-run

OFFICE = f"""
campaign = "dask-processes"
seeds = {{ start = 0, count = {SEEDS} }}
scenarios = ["builtin:office"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "random"
builtin = "random"
"""


def test_a_dask_worker_process_killed_by_pid_mid_run_changes_no_row(tmp_path):
    pytest.importorskip("distributed")
    path = write_campaign(tmp_path / "c", OFFICE)
    local = tmp_path / "local"
    done = ember_cli("evaluate", "--sandbox", "off", path, "-o", local, "--workers", "1", timeout=300)
    assert done.returncode == 0, done.stderr
    results = tmp_path / "dask"
    episodes = results / "episodes.jsonl"
    with dask_processes(tmp_path / "cluster", workers=2) as cluster:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ember.cli",
                "evaluate",
                str(path),
                "-o",
                str(results),
                "--scheduler",
                cluster.address,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for(
                lambda: process.poll() is not None or (episodes.exists() and episodes.read_bytes().count(b"\n") > 0),
                timeout=120,
                what="the first rows",
            )
            running = process.poll() is None
            rows_at_kill = episodes.read_bytes().count(b"\n")
            victim = cluster.workers[0]
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(60)
            _, err = process.communicate(timeout=300)
        finally:
            process.kill()
            process.wait(60)
    assert running and rows_at_kill < 2 * SEEDS, "the campaign ended before the kill (make it longer)"
    assert victim.returncode == -signal.SIGKILL
    assert process.returncode == 0, err
    rows = read_rows(results)
    assert len(rows) == 2 * SEEDS and all(row["status"] == "ok" for row in rows)
    assert_same(without_timing(rows), without_timing(read_rows(local)))


def test_the_command_writes_the_dask_workers_row_bytes_as_they_are(tmp_path, monkeypatch):
    # The worker encodes and checks each row; the command (this process) writes those bytes and never
    # encodes or checks a row itself: its encoder and row check refuse to run here.
    pytest.importorskip("distributed")
    path = write_campaign(tmp_path / "c", OFFICE)
    local = tmp_path / "local"
    done = ember_cli("evaluate", "--sandbox", "off", path, "-o", local, "--workers", "1", timeout=300)
    assert done.returncode == 0, done.stderr

    def refuse(*args, **kwargs):
        raise AssertionError("the command encoded or checked a row itself")

    monkeypatch.setattr(row_module, "canonical_json_reference", refuse)
    monkeypatch.setattr(row_module, "check_row", refuse)
    received = []
    outcomes = dask_runner.DaskRunner.outcomes

    def recording(self, done):
        results = outcomes(self, done)
        received.extend(value for _, kind, value in results if kind == "row")
        return results

    monkeypatch.setattr(dask_runner.DaskRunner, "outcomes", recording)
    results = tmp_path / "dask"
    with dask_processes(tmp_path / "cluster", workers=1) as cluster:
        summary = evaluate(path, results, scheduler=cluster.address, sandbox="off")
    assert summary.this_run_ok == 2 * SEEDS
    assert all(type(value) is row_module.RowLine for value in received)
    assert (results / "episodes.jsonl").read_bytes() == b"".join(value.line for value in received)
    assert_same(without_timing(read_rows(results)), without_timing(read_rows(local)))


def test_a_daemon_started_by_a_python_policy_on_a_dask_worker_is_ended_with_its_episode(tmp_path):
    # Regression: a Dask worker adopts no orphan (it is no child subreaper), so a daemon
    # that left its episode's session was reparented to init and outlived the campaign.
    pytest.importorskip("distributed")
    path = daemon_campaign(tmp_path / "c", DAEMON_POLICY, seeds="[0, 1]")
    with dask_processes(tmp_path / "cluster", workers=1) as cluster:
        done = ember_cli(
            "evaluate", "--sandbox", "off", path, "-o", tmp_path / "res", "--scheduler", cluster.address, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert [row["status"] for row in read_rows(tmp_path / "res")] == ["ok"] * 2
        assert_daemons_ended(path.parent, expected=2)


def test_a_batch_that_finishes_while_its_outcome_is_asked_gives_its_rows(tmp_path):
    # A batch that is not finished when the runner looks (a task rescheduled after its worker was lost
    # is pending again) may finish while the runner waits for its result: its outcomes are the batch's.
    pytest.importorskip("distributed")
    with dask_processes(tmp_path / "cluster", workers=1) as cluster:
        runner = dask_runner.DaskRunner(cluster.address)
        try:
            slept = runner.client.submit(time.sleep, 1.0, pure=False)
            # The outcomes once the sleep is over: [outcomes, None][0].
            future = runner.client.submit(operator.itemgetter(0), [[("row", "the row")], slept], pure=False)
            episode = dask_runner._Episode(task=None, attempt=1)
            episode.batch, episode.index = future, 0
            runner._members[future] = [episode]
            assert future.status == "pending"
            assert runner.outcomes([episode]) == [(episode, "row", "the row")]
            assert future not in runner._members
        finally:
            runner.close()
