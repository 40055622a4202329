"""Campaigns against hostile policies: every run ends by itself, and leaves no process behind.

Real processes throughout: the command, its workers, the episode
processes, agents and what they start.  Every process of a run carries an
environment tag, so the test finds them wherever they moved (another
session, another process group).  Timeouts only stop a hang; nothing is
timed.
"""

import contextlib
import os
import signal
import subprocess
import time

import pytest

from helpers.campaign_processes import (
    DAEMON_POLICY,
    IMPORT_DAEMON_POLICY,
    assert_daemons_ended,
    assert_none_left,
    copy_greedy_agent,
    daemon_campaign,
    daemon_pids,
    ember_command,
    new_tag,
    run_env,
    tagged,
    write_files,
)
from helpers.campaigns import by_key, ember_cli, read_rows, wait_for

HOSTILE = """
import os, signal, sys, threading, time
from ember.sim.policies import GreedyPolicy

# A non-daemon thread from the import on: the interpreter would wait for it at exit.
threading.Thread(target=time.sleep, args=(3600,), name="hostile-import").start()


def threads(scenario):
    greedy = GreedyPolicy(scenario)

    def policy(observation):
        if observation["step"] == 2:
            threading.Thread(target=time.sleep, args=(3600,), name="hostile-step").start()
        return greedy(observation)

    return policy


def printer(scenario):
    print("made a printer")
    greedy = GreedyPolicy(scenario)

    def policy(observation):
        print("step", observation["step"], "on stdout")
        print("step", observation["step"], "on stderr", file=sys.stderr)
        return greedy(observation)

    return policy


def alarm(scenario):
    def policy(observation):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM, signal.SIGINT})
        time.sleep(3)
        return {}

    return policy


def swallower(scenario):
    def policy(observation):
        while True:
            try:
                time.sleep(100)
            except BaseException:
                pass

    return policy
"""

FORKING_AGENT = """
import json, os, sys, time
if os.fork() == 0:
    while True:
        time.sleep(1)
for line in sys.stdin:
    if json.loads(line)["type"] == "observation":
        time.sleep(3600)
"""

WRAP = """
( while true; do :; done ) &
exec python3 greedy_agent.py
"""

POLICIES = """
[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "threads"
python = "hostile:threads"

[[policies]]
name = "printer"
python = "hostile:printer"

[[policies]]
name = "alarm"
python = "hostile:alarm"
step_timeout = 0.5

[[policies]]
name = "swallower"
python = "hostile:swallower"
step_timeout = 0.5

[[policies]]
name = "forker"
agent = "python3 forking_agent.py"
step_timeout = 0.5

[[policies]]
name = "wrapped"
agent = "bash wrap.sh"
"""


def hostile_folder(folder, seeds="[0, 1]"):
    write_files(
        folder,
        {
            "hostile.py": HOSTILE,
            "forking_agent.py": FORKING_AGENT,
            "wrap.sh": WRAP,
            "campaign.toml": f'campaign = "hostile"\nseeds = {seeds}\nscenarios = ["builtin:small-room"]\n' + POLICIES,
            "clean.toml": 'campaign = "hostile"\nseeds = [0, 1]\nscenarios = ["builtin:small-room"]\n'
            '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n',
        },
    )
    copy_greedy_agent(folder)
    return folder


def without_timing(row):
    return dict(row, elapsed_s=None)


def test_hostile_policies_beside_greedy_end_by_themselves(tmp_path):
    folder = hostile_folder(tmp_path / "c")
    tag = new_tag()
    results = tmp_path / "res"
    done = ember_cli("evaluate", folder / "campaign.toml", "-o", results, "--workers", "2", env=run_env(tag))
    assert done.returncode == 0, done.stderr
    assert_none_left(tag)
    rows = by_key(read_rows(results))
    assert len(rows) == 14
    status = {(policy, seed): row["status"] for (policy, _, seed), row in rows.items()}
    for seed in (0, 1):
        for policy in ("greedy", "threads", "printer", "wrapped"):
            assert status[(policy, seed)] == "ok", rows
    for (policy, _, _), row in rows.items():
        if policy in ("alarm", "swallower", "forker"):
            index = {"alarm": 3, "swallower": 4, "forker": 5}[policy]
            assert row["status"] == "failed"
            assert row["error"].startswith("step 1: ") and f"(policies[{index}].step_timeout)" in row["error"], row
    # The greedy rows are a clean run's: hostile neighbours change nothing.
    clean = tmp_path / "clean"
    assert ember_cli("evaluate", folder / "clean.toml", "-o", clean, "--workers", "1").returncode == 0
    for key, row in by_key(read_rows(clean)).items():
        assert without_timing(rows[key]) == without_timing(row)
    # Nothing on stdout but the leaderboard: exactly what 'ember rank --format table' prints.
    board = ember_cli("rank", results, "--format", "table")
    assert board.returncode == 0 and board.stdout
    assert done.stdout == board.stdout.rstrip(b"\n") + b"\n"  # evaluate ends the table with one newline
    assert b"made a printer" not in done.stderr and b"on stderr" not in done.stderr
    # What the printer wrote is in its logs.
    logs = results / "logs" / "printer" / "small-room"
    # print() goes to the host's standard error: one log (its standard output is the answer channel).
    assert (logs / "0.stderr").read_text().startswith("made a printer\nstep 1 on stdout\n")
    assert "step 1 on stderr\n" in (logs / "0.stderr").read_text()
    for policy in ("forker", "wrapped"):
        assert (results / "logs" / policy / "small-room" / "0.stderr").exists()


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["Ctrl-C", "SIGTERM", "SIGKILL"]
)
def test_no_process_outlives_the_command_killed(tmp_path, signum):
    folder = hostile_folder(tmp_path / "c", seeds="{ start = 0, count = 6 }")
    text = (folder / "campaign.toml").read_text().replace("step_timeout = 0.5", "step_timeout = 30")
    (folder / "campaign.toml").write_text(text)
    tag = new_tag()
    process = subprocess.Popen(
        ember_command("evaluate", folder / "campaign.toml", "-o", tmp_path / "res", "--workers", "2"),
        env=run_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        def hostile_children_running():
            commands = tagged(tag).values()
            return any("forking_agent.py" in c for c in commands) or any("wrap.sh" in c for c in commands)

        wait_for(hostile_children_running, what="an agent of the campaign to run")
        os.kill(process.pid, signum)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait(60)
    assert process.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}[signum]
    assert out == b""
    assert_none_left(tag)


@pytest.mark.parametrize(
    ("module", "seeds", "daemons"),
    [
        # Regression: a daemon left its episode's session and, once its parent exited,
        # its parent links; it was found only while the worker adopting it won a race against the clock.
        (DAEMON_POLICY, 3, 3),
        # Regression: the check of a python policy imports its module in a process of
        # its own, which exited after its verdict: a daemon the import started went to init.
        # Daemons: the check's import, then the episode's import and its make.
        (IMPORT_DAEMON_POLICY, 1, 3),
    ],
    ids=["started-by-make", "started-at-import-too"],
)
def test_a_daemon_started_by_a_python_policy_is_ended_with_its_episode(tmp_path, module, seeds, daemons):
    path = daemon_campaign(tmp_path / "c", module, seeds=list(range(seeds)))
    tag = new_tag()
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1", env=run_env(tag))
    assert done.returncode == 0, done.stderr
    assert [row["status"] for row in read_rows(tmp_path / "res")] == ["ok"] * seeds
    assert_daemons_ended(path.parent, expected=daemons)
    assert_none_left(tag)


def test_a_daemon_started_by_a_python_policy_is_ended_when_its_worker_is_killed(tmp_path):
    # Regression: the worker killed by SIGKILL takes its episode process with it (the
    # parent-death signal), and the daemon, in a session of its own, went to init: nobody ended it.
    path = daemon_campaign(tmp_path / "c", DAEMON_POLICY, factory="slow")
    folder = path.parent
    tag = new_tag()
    process = subprocess.Popen(
        ember_command("evaluate", path, "-o", tmp_path / "res", "--workers", "1"),
        env=run_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: daemon_pids(folder), what="the first daemon")
        workers = _workers_of(process.pid)
        assert len(workers) == 1
        os.kill(workers[0], signal.SIGKILL)
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
        process.wait(60)
    assert process.returncode == 0, err
    assert [row["status"] for row in read_rows(tmp_path / "res")] == ["ok"]  # the attempt lost, then run again
    assert_daemons_ended(folder, expected=2)
    assert_none_left(tag)


def _workers_of(pid):
    """The pids of the local workers of the command ``pid`` (its spawned children)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[1]) == pid and b"spawn_main" in command and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


GREEDY_MODULE = """
from ember.sim.policies import GreedyPolicy


def make(scenario):
    return GreedyPolicy(scenario)
"""


def test_twenty_workers_killed_by_pid_never_crash_the_command(tmp_path):
    import random

    import ember

    kills = 20
    seeds = 300
    folder = write_files(
        tmp_path / "c",
        {
            "greedy_module.py": GREEDY_MODULE,
            # Built-in episodes run in the worker itself, python ones in an episode process it watches:
            # kills land on both.
            "campaign.toml": f'campaign = "kills"\nseeds = {{ start = 0, count = {seeds} }}\n'
            'scenarios = ["builtin:small-room"]\n[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
            '[[policies]]\nname = "py"\npython = "greedy_module:make"\n',
        },
    )
    results = tmp_path / "res"
    episodes = results / "episodes.jsonl"
    tag = new_tag()
    process = subprocess.Popen(
        # More retries than kills: no episode can be charged out, so every row must be ok.
        ember_command("evaluate", folder / "campaign.toml", "-o", results, "--workers", "2", "--retries", kills + 1),
        env=run_env(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    chooser = random.Random(19)
    killed = 0
    try:

        def rows_so_far():
            return episodes.read_bytes().count(b"\n") if episodes.exists() else 0

        seen = 0
        while killed < kills and process.poll() is None:
            wait_for(
                lambda before=seen: process.poll() is not None or (rows_so_far() > before and _workers_of(process.pid)),
                what="progress after a kill",
            )
            # The command is held still from here to the kill, so that it hands out no more work: the
            # workers finish at most what they hold, and the campaign cannot end before every kill.
            os.kill(process.pid, signal.SIGSTOP)
            seen = rows_so_far()
            time.sleep(chooser.uniform(0, 0.1))  # idle, mid-episode or starting: anywhere
            workers = _workers_of(process.pid)
            if workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(chooser.choice(workers), signal.SIGKILL)
                    killed += 1
            os.kill(process.pid, signal.SIGCONT)
        out, err = process.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(60)
    assert killed == kills, "the campaign ended before every kill (make it longer)"
    assert process.returncode == 0, err
    assert b"Traceback" not in err and out
    rows = by_key(read_rows(results))
    assert len(rows) == 2 * seeds and all(row["status"] == "ok" for row in rows.values())
    by_seed = {}
    for (policy, _, seed), row in rows.items():
        by_seed.setdefault(seed, {})[policy] = row["metrics"]
    assert all(pair["py"] == pair["greedy"] for pair in by_seed.values())  # the same policy, run two ways
    for seed in chooser.sample(range(seeds), 5):  # against the engine, in this process
        record = tmp_path / f"{seed}.record"
        ember.run_episode(ember.load_scenario("builtin:small-room"), "greedy", seed, str(record))
        assert by_seed[seed]["greedy"] == ember.episode_metrics("builtin:small-room", str(record)).to_dict()
    assert_none_left(tag)


def test_a_bad_scheduler_address_ends_at_once_with_one_line(tmp_path):
    pytest.importorskip("distributed")
    folder = write_files(
        tmp_path / "c",
        {
            "campaign.toml": 'campaign = "c"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'
            '[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
        },
    )
    for address in ("foo://bar", "tcp://[::1"):
        path = folder / "campaign.toml"
        done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--scheduler", address, timeout=60)
        assert done.returncode == 2 and done.stdout == b""
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ember: --scheduler {address}: cannot connect"), lines
        assert not (tmp_path / "res").exists()


def test_on_dask_too_step_timeout_is_enforced_and_nothing_outlives_its_episode(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    folder = hostile_folder(tmp_path / "c")
    text = (folder / "campaign.toml").read_text()
    (folder / "campaign.toml").write_text(text.replace("seeds = [0, 1]", "seeds = [0]"))
    tag = new_tag()
    for name, value in run_env(tag).items():
        monkeypatch.setenv(name, value)  # the Dask workers, and what they start, carry the tag
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        cluster_processes = set(tagged(tag))  # the cluster's own (and this process's resource tracker)
        done = ember_cli(
            "evaluate", folder / "campaign.toml", "-o", tmp_path / "res", "--scheduler", cluster.scheduler_address
        )
        assert done.returncode == 0, done.stderr
        wait_for(lambda: set(tagged(tag)) <= cluster_processes, timeout=30, what="the episodes' processes to end")
    rows = by_key(read_rows(tmp_path / "res"))
    errors = {policy: row["error"] for (policy, _, _), row in rows.items()}
    for policy, index in (("alarm", 3), ("swallower", 4), ("forker", 5)):
        assert f"(policies[{index}].step_timeout)" in errors[policy], errors
    for policy in ("greedy", "threads", "printer", "wrapped"):
        assert errors[policy] is None, errors
