"""Runners (ember.campaign.runner): local worker processes and a Dask cluster, faults with real processes.

Faults use real processes: a worker killed by PID, the command SIGKILLed
and resumed, a real Dask LocalCluster with a worker killed.  Nothing here
asserts on elapsed time; timeouts only stop a hang.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.campaigns import (
    SMALL,
    builtin_metrics,
    by_key,
    ember_cli,
    hook_env,
    read_rows,
    wait_for,
    without_timing,
    write_campaign,
)
from helpers.ranking_results import assert_same


def test_rows_are_the_same_for_one_and_two_workers_and_dask(basic_run, tmp_path):
    distributed = pytest.importorskip("distributed")
    path = basic_run[0] / "campaign.toml"
    one, two, dask = tmp_path / "one", basic_run[1], tmp_path / "dask"
    assert ember_cli("evaluate", path, "-o", one, "--workers", "1").returncode == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        done = ember_cli("evaluate", path, "-o", dask, "--scheduler", cluster.scheduler_address)
    assert done.returncode == 0, done.stderr
    expected = without_timing(read_rows(one))
    assert_same(without_timing(read_rows(two)), expected)
    assert_same(without_timing(read_rows(dask)), expected)
    rankings = [json.loads((d / "ranking.json").read_bytes()) for d in (one, two, dask)]
    for ranking in rankings:
        del ranking["source"]  # the SHA-256 of episodes.jsonl: timings and completion order differ
    assert rankings[0] == rankings[1] == rankings[2]


# -- faults with real processes ---------------------------------------------------------

BLOCKING = """
campaign = "faults"
seeds = {{ start = 0, count = {count} }}
scenarios = ["builtin:small-room"]

[[policies]]
name = "py"
python = "campaign_hooks:{hook}"
"""


def test_a_worker_killed_by_pid_is_retried(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    path = write_campaign(tmp_path / "c", BLOCKING.format(count=4, hook="blocking"), hooks=True)
    results = tmp_path / "res"
    process = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", "evaluate", str(path), "-o", str(results), "--workers", "2"],
        env=hook_env(hooks),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: (hooks / "pid").exists(), what="the blocked worker")
        os.kill(int((hooks / "pid").read_text()), signal.SIGKILL)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    rows = by_key(read_rows(results))
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows.values())
    for (_, _, seed), row in rows.items():
        assert_same(row["metrics"], builtin_metrics(SMALL, "greedy", seed, tmp_path)[0])


def test_a_killed_worker_is_charged_and_its_neighbour_is_not(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    path = write_campaign(tmp_path / "c", BLOCKING.format(count=4, hook="blocking"), hooks=True)
    results = tmp_path / "res"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ember.cli",
            "evaluate",
            str(path),
            "-o",
            str(results),
            "--workers",
            "2",
            "--retries",
            "0",
        ],
        env=hook_env(hooks),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: (hooks / "pid").exists(), what="the blocked worker")
        os.kill(int((hooks / "pid").read_text()), signal.SIGKILL)
        process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0
    rows = read_rows(results)
    assert len(by_key(rows)) == 4
    lost = [r for r in rows if r["status"] == "failed"]
    assert len(lost) == 1 and lost[0]["error"] == "worker lost"  # --retries 0: one attempt
    assert all(r["status"] == "ok" for r in rows if r is not lost[0])


def test_a_worker_lost_every_time_gives_a_worker_lost_row(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    path = write_campaign(tmp_path / "c", BLOCKING.format(count=1, hook="dies"), hooks=True)
    results = tmp_path / "res"
    done = subprocess.run(  # noqa: PLW1510 (the status is asserted below)
        [
            sys.executable,
            "-m",
            "ember.cli",
            "evaluate",
            str(path),
            "-o",
            str(results),
            "--workers",
            "1",
            "--retries",
            "1",
        ],
        env=hook_env(hooks),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [row] = read_rows(results)
    assert row["status"] == "failed" and row["error"] == "worker lost" and row["metrics"] is None
    assert sorted(p.name for p in hooks.iterdir()) == ["attempt-0", "attempt-1"]  # 1 + --retries attempts


def test_the_command_killed_mid_run_loses_nothing_and_resumes(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    text = BLOCKING.format(count=8, hook="blocking") + '\n[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
    path = write_campaign(tmp_path / "c", text, hooks=True)
    results = tmp_path / "res"
    process = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", "evaluate", str(path), "-o", str(results), "--workers", "2"],
        env=hook_env(hooks),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_for(lambda: (hooks / "pid").exists(), what="the blocked worker")
        episodes = results / "episodes.jsonl"
        wait_for(lambda: episodes.read_bytes().count(b"\n") >= 4, what="finished episodes")
    finally:
        process.kill()  # SIGKILL, as a crash would
        process.communicate(timeout=30)
    # The workers end themselves once their command has gone, the blocked one included.
    wait_for(lambda: _ended(int((hooks / "pid").read_text())), timeout=30, what="the orphaned worker to exit")
    assert process.returncode == -signal.SIGKILL
    data = episodes.read_bytes()
    finished = data[: data.rfind(b"\n") + 1]
    before = read_rows(results) if data.endswith(b"\n") else None
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", env=hook_env(hooks))
    assert done.returncode == 0, done.stderr
    assert episodes.read_bytes().startswith(finished)  # nothing finished is lost
    rows = by_key(read_rows(results))  # and no key has two rows
    assert len(rows) == 16 and all(r["status"] == "ok" for r in rows.values())
    if before is not None:
        assert len(read_rows(results)) == 16


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"])
def test_an_interrupted_run_keeps_finished_rows(tmp_path, signum, status):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    path = write_campaign(tmp_path / "c", BLOCKING.format(count=6, hook="blocking"), hooks=True)
    results = tmp_path / "res"
    process = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", "evaluate", str(path), "-o", str(results), "--workers", "2"],
        env=hook_env(hooks),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: (hooks / "pid").exists(), what="the blocked worker")
        wait_for(lambda: (results / "episodes.jsonl").read_bytes().count(b"\n") >= 5, what="the other episodes")
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, err
    assert out == b""
    assert len(read_rows(results)) == 5
    pid = int((hooks / "pid").read_text())
    wait_for(
        lambda: _ended(pid),
        timeout=30,
        what="the blocked worker to be ended",
    )


def _ended(pid):
    """True once ``pid`` has exited (gone, or a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


def test_a_dask_worker_killed_mid_run(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    monkeypatch.setenv("EMBER_TEST_HOOK_DIR", str(hooks))
    path = write_campaign(tmp_path / "c", BLOCKING.format(count=4, hook="blocking"), hooks=True)
    results = tmp_path / "res"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
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
                cluster.scheduler_address,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for(lambda: (hooks / "pid").exists(), what="the blocked Dask worker")
            os.kill(int((hooks / "pid").read_text()), signal.SIGKILL)
            _, err = process.communicate(timeout=120)
        finally:
            process.kill()
    assert process.returncode == 0, err
    rows = by_key(read_rows(results))
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows.values())
    for (_, _, seed), row in rows.items():
        assert_same(row["metrics"], builtin_metrics(SMALL, "greedy", seed, tmp_path)[0])


def test_a_dask_batch_holds_about_a_quarter_second_of_episodes():
    from ember.campaign.dask_runner import DASK_BATCH, DASK_BATCH_MAX, DASK_TASK_S, batch_size

    assert batch_size(0, 0.0) == DASK_BATCH  # before any row
    assert batch_size(100, 100 * 0.017) == round(DASK_TASK_S / 0.017)  # office episodes: 15
    assert batch_size(10, 30.0) == 1  # episodes of 3 s go one by one
    assert batch_size(1000, 0.5) == DASK_BATCH_MAX  # half a millisecond each: as many as allowed
    assert batch_size(5, 0.0) == DASK_BATCH_MAX  # rows rounded to 0.000 s
