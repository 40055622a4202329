"""ember evaluate / export (campaign.md): sources, results layout, resume, faults, bad input.

Faults use real processes: a worker killed by PID, the command SIGKILLed
and resumed, a real Dask LocalCluster with a worker killed.  Nothing here
asserts on elapsed time; timeouts only stop a hang.
"""

import csv
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ember
from ember.canonical import canonical_json
from ember.record.writer import run_episode

from conftest import make_scenario
from ranking_results import assert_same

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE_AGENT = os.path.join(os.path.dirname(HERE), "examples", "greedy_agent.py")
ROW_KEYS = {
    "scenario_id",
    "scenario_hash",
    "seed",
    "policy",
    "status",
    "error",
    "metrics",
    "steps",
    "record",
    "record_sha256",
    "elapsed_s",
}
SMALL = "builtin:small-room"


def ember_cli(*args, cwd=None, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )


def hook_env(hook_dir):
    return dict(os.environ, EMBER_TEST_HOOK_DIR=str(hook_dir))


TINY = make_scenario(
    3,
    5,
    people={"a": (1, 1), "b": (1, 3)},
    exits={"out": (0, 2)},
    ignitions=[(2, 0)],
    p="1/2",
    max_steps=20,
    scenario_id="tiny",
)


def write_campaign(folder, text, hooks=False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.json").write_text(json.dumps(TINY))
    path = folder / "campaign.toml"
    path.write_text(text)
    if hooks:
        shutil.copy(os.path.join(HERE, "campaign_hooks.py"), folder / "campaign_hooks.py")
    return path


def read_rows(results):
    data = (results / "episodes.jsonl").read_bytes()
    assert data == b"" or data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    rows = [json.loads(line) for line in lines]
    for line, row in zip(lines, rows):
        assert line == canonical_json(row), "rows are canonical JSON"
        assert set(row) == ROW_KEYS
    return rows


def by_key(rows):
    keyed = {}
    for row in rows:
        key = (row["policy"], row["scenario_hash"], row["seed"])
        assert key not in keyed, f"two rows for {key}"
        keyed[key] = row
    return keyed


def without_timing(rows):
    return sorted(
        (dict(row, elapsed_s=None) for row in rows), key=lambda r: (r["policy"], r["scenario_hash"], r["seed"])
    )


def builtin_metrics(scenario, policy, seed, tmp_path):
    path = tmp_path / f"ref-{policy}-{seed}.record"
    run_episode(ember.load_scenario(scenario), policy, seed, str(path))
    return ember.episode_metrics(scenario, str(path)).to_dict(), path.read_bytes()


def wait_for(condition, timeout=90, what="a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def assert_one_line_error(done):
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


def snapshot(folder):
    """Every file under ``folder`` with its bytes (to prove nothing was written)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


BASIC = """
campaign = "basic"
seeds = [0, 1]
scenarios = ["builtin:small-room", { source = "tiny.json", seeds = [4] }]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "rnd"
builtin = "random"
"""


# -- the results directory ------------------------------------------------------


@pytest.fixture(scope="module")
def basic_run(tmp_path_factory):
    """BASIC evaluated once with 2 workers: (campaign folder, results directory), never modified."""
    base = tmp_path_factory.mktemp("basic")
    path = write_campaign(base / "c", BASIC)
    done = ember_cli("evaluate", path, "-o", base / "res", "--workers", "2")
    assert done.returncode == 0, done.stderr
    return base / "c", base / "res"


@pytest.fixture
def basic_copy(basic_run, tmp_path):
    """A private copy of ``basic_run``: (campaign path, results directory)."""
    folder, results = basic_run
    shutil.copytree(folder, tmp_path / "c")
    shutil.copytree(results, tmp_path / "res")
    return tmp_path / "c" / "campaign.toml", tmp_path / "res"


def test_builtin_rows_layout_and_kept_records(tmp_path):
    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    assert done.returncode == 0, done.stderr
    assert b"greedy" in done.stdout and b"rnd" in done.stdout  # the leaderboard
    assert done.stderr.decode().splitlines() == ["ember: 6 episodes: 6 ok, 0 failed (this run: 6 ok, 0 failed of 6)."]
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert (results / "campaign.json").read_bytes() == canonical_json(campaign) + b"\n"
    small = ember.load_scenario(SMALL)
    assert campaign == {
        "campaign": "basic",
        "versions": {
            "simulator": "1.0",
            "observation": "1.0",
            "metrics": "1.0",
            "ranking": "1.0",
            "package": campaign["versions"]["package"],
        },
        "scenarios": [
            {
                "scenario_id": "small-room",
                "scenario_hash": ember.scenario_hash(small),
                "source": SMALL,
                "seeds": [0, 1],
            },
            {"scenario_id": "tiny", "scenario_hash": ember.scenario_hash(TINY), "source": "tiny.json", "seeds": [4]},
        ],
        "policies": [{"name": "greedy", "builtin": "greedy"}, {"name": "rnd", "builtin": "random"}],
    }
    rows = by_key(read_rows(results))
    assert len(rows) == 6
    assert ember_cli("rank", results).stdout == (results / "ranking.json").read_bytes()  # ranking.md, via ember rank
    for source, seeds in ((SMALL, (0, 1)), (TINY, (4,))):
        for policy, builtin in (("greedy", "greedy"), ("rnd", "random")):
            for seed in seeds:
                metrics, record = builtin_metrics(source, builtin, seed, tmp_path)
                row = rows[(policy, ember.scenario_hash(source), seed)]
                assert row["status"] == "ok" and row["error"] is None
                assert_same(row["metrics"], metrics)
                assert row["steps"] == metrics["time"]["episode_steps"]
                assert type(row["elapsed_s"]) is float and row["elapsed_s"] == round(row["elapsed_s"], 3)
                # The kept record is exactly what 'ember run' writes, gzip with mtime 0.
                scenario_id = metrics["scenario_id"]
                assert row["record"] == f"records/{policy}/{scenario_id}/{seed}.record.gz"
                kept = (results / row["record"]).read_bytes()
                assert kept[4:8] == b"\0\0\0\0"
                assert gzip.decompress(kept) == record
                assert row["record_sha256"] == hashlib.sha256(record).hexdigest()
    assert not list(results.rglob("*.tmp*"))


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


# -- the four sources --------------------------------------------------------------

AGENT_SCRIPT = """
import runpy, sys
print("agent says hello", file=sys.stderr, flush=True)
runpy.run_path("greedy_agent.py", run_name="__main__")
"""


def test_python_agent_and_records_sources(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "greedy_agent.py")
    (folder / "agent.py").write_text(AGENT_SCRIPT)
    (folder / "crash.py").write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    sub = folder / "subs" / "small-room"
    sub.mkdir(parents=True)
    small = ember.load_scenario(SMALL)
    run_episode(small, "greedy", 0, str(sub / "0.record"))
    run_episode(small, "greedy", 1, str(sub / "2.record"))  # seed 1 placed as seed 2
    run_episode(small, "greedy", 3, str(sub / "3.record"))
    (sub / "3.record.gz").write_bytes(gzip.compress((sub / "3.record").read_bytes()))  # two files for seed 3
    (sub / "notes.txt").write_text("ignored")
    run_episode(small, "greedy", 4, str(sub / "4.record.gz"))
    run_episode(small, "greedy", 5, str(sub / "5.record.zst"))
    path = write_campaign(
        folder,
        """
campaign = "sources"
seeds = [0, 1, 2, 3, 4, 5]
scenarios = ["builtin:small-room"]

[[policies]]
name = "py"
python = "campaign_hooks:greedy"

[[policies]]
name = "agent"
agent = "python3 agent.py"
step_timeout = 30

[[policies]]
name = "subs"
records = "subs"

[[policies]]
name = "crash"
agent = "python3 crash.py"

[[policies]]
name = "raises"
python = "campaign_hooks:raises"

[[policies]]
name = "illegal"
python = "campaign_hooks:illegal"
""",
        hooks=True,
    )
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert b"boom" not in done.stderr and b"hello" not in done.stderr  # agent stderr goes to logs only
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert campaign["policies"][1] == {"name": "agent", "agent": "python3 agent.py", "step_timeout": 30.0}
    assert campaign["policies"][3] == {"name": "crash", "agent": "python3 crash.py", "step_timeout": 10.0}
    rows = by_key(read_rows(results))
    assert len(rows) == 36
    h = ember.scenario_hash(small)
    for seed in range(6):
        metrics, _ = builtin_metrics(SMALL, "greedy", seed, tmp_path)
        for policy in ("py", "agent"):
            row = rows[(policy, h, seed)]
            assert row["status"] == "ok", row["error"]
            assert_same(row["metrics"], metrics)
            assert row["record"] is None and row["record_sha256"] is None
        log = results / "logs" / "agent" / "small-room" / f"{seed}.stderr"
        assert log.read_text() == "agent says hello\n"
        assert (results / "logs" / "crash" / "small-room" / f"{seed}.stderr").read_text() == "boom\n"
        crash = rows[("crash", h, seed)]
        assert crash["status"] == "failed" and crash["metrics"] is None and crash["steps"] is None
        assert "exited with status 3" in crash["error"]
        assert "ZeroDivisionError: the policy divides by zero" in rows[("raises", h, seed)]["error"]
        assert "illegal actions" in rows[("illegal", h, seed)]["error"]
    sub0 = rows[("subs", h, 0)]
    assert sub0["status"] == "ok" and sub0["record"] == "subs/small-room/0.record"
    assert sub0["record_sha256"] == hashlib.sha256((sub / "0.record").read_bytes()).hexdigest()
    assert_same(sub0["metrics"], builtin_metrics(SMALL, "greedy", 0, tmp_path)[0])
    assert (
        rows[("subs", h, 1)]["error"] == "no submitted record subs/small-room/1.record (nor .record.gz, .record.zst)."
    )
    assert "header names seed 1, its place seed 2" in rows[("subs", h, 2)]["error"]
    assert "two files for one episode" in rows[("subs", h, 3)]["error"]
    for seed, name in ((4, "4.record.gz"), (5, "5.record.zst")):  # compressed: the hash is of the record itself
        row = rows[("subs", h, seed)]
        metrics, plain = builtin_metrics(SMALL, "greedy", seed, tmp_path)
        assert row["status"] == "ok" and row["record"] == f"subs/small-room/{name}"
        assert row["record_sha256"] == hashlib.sha256(plain).hexdigest()
        assert_same(row["metrics"], metrics)
    for row in rows.values():
        assert (row["error"] is None) == (row["status"] == "ok")
        assert "\n" not in (row["error"] or "")


def test_python_policy_step_timeout(tmp_path):
    path = write_campaign(
        tmp_path / "c",
        """
campaign = "slow"
seeds = [0]
scenarios = ["builtin:small-room"]
[[policies]]
name = "slow"
python = "campaign_hooks:slow"
step_timeout = 0.2
""",
        hooks=True,
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1")
    assert done.returncode == 0, done.stderr
    [row] = read_rows(tmp_path / "res")
    assert row["status"] == "failed"
    assert row["error"] == "step 1: the python policy did not answer within 0.2 s (step_timeout)."


# -- resume ---------------------------------------------------------------------------


def test_resume_adds_a_policy_and_seeds_and_reruns_nothing_else(basic_copy):
    path, results = basic_copy
    folder = path.parent
    before = (results / "episodes.jsonl").read_bytes()
    again = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert again.returncode == 0
    assert (results / "episodes.jsonl").read_bytes() == before  # nothing reruns
    (folder / "tiny2.json").write_text(json.dumps(dict(TINY, scenario_id="tiny2", termination={"max_steps": 7})))
    grown = BASIC.replace("seeds = [0, 1]", "seeds = [0, 1, 2]").replace(
        '"builtin:small-room"', '"tiny2.json", "builtin:small-room"'
    )
    grown += '\n[[policies]]\nname = "stay"\nbuiltin = "stay"\n'
    write_campaign(folder, grown)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    after = (results / "episodes.jsonl").read_bytes()
    assert after.startswith(before)
    rows = by_key(read_rows(results))
    # K: tiny2 x {0,1,2}, small-room x {0,1,2}, tiny x {4}; three policies.
    assert len(rows) == 7 * 3
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert [s["scenario_id"] for s in campaign["scenarios"]] == ["small-room", "tiny", "tiny2"]  # old ones first
    assert campaign["scenarios"][0]["seeds"] == [0, 1, 2]
    assert [p["name"] for p in campaign["policies"]] == ["greedy", "rnd", "stay"]


def test_retry_failed_reruns_failed_rows_only(tmp_path):
    folder = tmp_path / "c"
    path = write_campaign(
        folder,
        """
campaign = "retry"
seeds = [0, 1]
scenarios = ["builtin:small-room"]
[[policies]]
name = "greedy"
builtin = "greedy"
[[policies]]
name = "flaky"
python = "flaky:make"
""",
    )
    (folder / "flaky.py").write_text("raise ImportError('not yet')\n")
    # The module must import when the campaign is checked: make it import, then fail in the workers.
    (folder / "flaky.py").write_text(
        "import os\nfrom ember.sim.policies import GreedyPolicy\n"
        "def make(scenario):\n    if not os.path.exists(os.path.join(os.path.dirname(__file__), 'ready')):\n"
        "        raise RuntimeError('not ready')\n    return GreedyPolicy(scenario)\n"
    )
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results, "--workers", "1").returncode == 0
    first = read_rows(results)
    assert sorted(r["status"] for r in first) == ["failed", "failed", "ok", "ok"]
    (folder / "ready").write_text("")
    assert ember_cli("evaluate", path, "-o", results, "--workers", "1").returncode == 0
    assert read_rows(results) == first  # failed rows are final without --retry-failed
    assert ember_cli("evaluate", path, "-o", results, "--workers", "1", "--retry-failed").returncode == 0
    rows = read_rows(results)
    assert rows[:4] == first and len(rows) == 6
    assert all(r["status"] == "ok" and r["policy"] == "flaky" for r in rows[4:])


CHANGES = [
    (
        "policy source",
        ('builtin = "random"', 'builtin = "stay"'),
        'policies[1] (rnd) is builtin = "random" there, builtin = "stay" now',
    ),
    ("campaign ID", ('campaign = "basic"', 'campaign = "other"'), "campaign is 'basic' there, 'other' now"),
    ("seed removed", ("seeds = [0, 1]", "seeds = [0]"), "scenarios[0] (small-room) lost seed 1"),
    (
        "policy removed",
        ('[[policies]]\nname = "rnd"\nbuiltin = "random"', ""),
        "policies[1] (rnd) is missing from the campaign file",
    ),
]


@pytest.mark.parametrize("case", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_changed_campaign_is_refused_with_the_first_difference(basic_copy, case):
    _, (old, new), difference = case
    path, results = basic_copy
    folder = path.parent
    before = snapshot(results)
    assert old in BASIC
    write_campaign(folder, BASIC.replace(old, new))
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results, "--workers", "2"))
    assert difference in line
    assert "campaign.json differs" in line
    assert snapshot(results) == before


def test_a_changed_scenario_content_is_refused_and_a_moved_one_is_not(tmp_path):
    folder = tmp_path / "c"
    scenario = ember.load_scenario(SMALL)
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "room.json").write_text(json.dumps(scenario))
    text = (
        'campaign = "files"\nseeds = [0]\nscenarios = ["a/room.json"]\n[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
    )
    path = write_campaign(folder, text)
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results).returncode == 0
    (folder / "b").mkdir()
    shutil.move(folder / "a" / "room.json", folder / "b" / "room.json")
    write_campaign(folder, text.replace("a/room.json", "b/room.json"))
    assert ember_cli("evaluate", path, "-o", results).returncode == 0  # same content, new place
    assert json.loads((results / "campaign.json").read_bytes())["scenarios"][0]["source"] == "b/room.json"
    scenario["termination"]["max_steps"] += 1
    (folder / "b" / "room.json").write_text(json.dumps(scenario))
    before = snapshot(results)
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
    assert "scenarios[0] (small-room) has content hash" in line
    assert snapshot(results) == before


def test_a_torn_last_line_is_set_aside_with_a_warning(basic_copy):
    path, results = basic_copy
    rows = read_rows(results)
    # Simulate a crash mid-write: the last row lost, half of it on disk.
    full = (results / "episodes.jsonl").read_bytes()
    last = full[:-1].rsplit(b"\n", 1)[1] + b"\n"
    torn = last[: len(last) // 2]
    (results / "episodes.jsonl").write_bytes(full[: -len(last)] + torn)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stderr.decode() and "episodes.jsonl.torn" in done.stderr.decode()
    assert (results / "episodes.jsonl.torn").read_bytes() == torn
    after = read_rows(results)
    assert after[:-1] == rows[:-1]
    assert without_timing(after) == without_timing(rows)  # the lost row was run again, once


def test_a_line_that_is_not_a_row_is_refused(basic_copy):
    path, results = basic_copy
    with open(results / "episodes.jsonl", "ab") as handle:
        handle.write(b'{"not": "a row"}\n')
    before = snapshot(results)
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
    assert "episodes.jsonl:7: $: a row has exactly the keys" in line  # the one schema (ember.results)
    assert snapshot(results) == before


def test_one_writer_per_results_directory(tmp_path):
    import fcntl

    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    results.mkdir()
    fd = os.open(results, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running 'ember evaluate' holds it
        line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
        assert "locked" in line
        assert snapshot(results) == {}
    finally:
        os.close(fd)
    assert ember_cli("evaluate", path, "-o", results).returncode == 0


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


def test_progress_bar_on_a_terminal_only(basic_run, tmp_path):
    import pty

    pytest.importorskip("tqdm")
    path = basic_run[0] / "campaign.toml"
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal 120 columns wide
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "ember.cli", "evaluate", str(path), "-o", str(tmp_path / "tty"), "--workers", "1"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
        )
        os.close(slave)
        shown = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command has gone
                break
            if not data:
                break
            shown += data
    finally:
        os.close(master)
    assert process.wait(60) == 0
    text = shown.decode(errors="replace")
    assert "ember evaluate" in text and "6/6" in text and "failed=0" in text and "episode/s" in text
    piped = ember_cli("evaluate", path, "-o", tmp_path / "pipe", "--workers", "1")
    assert piped.stderr.decode().splitlines() == ["ember: 6 episodes: 6 ok, 0 failed (this run: 6 ok, 0 failed of 6)."]


# -- bad input ----------------------------------------------------------------------------

GOOD_POLICY = '[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
HEAD = 'campaign = "bad"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'
BAD = [
    ("not TOML", "campaign = \n", "not valid TOML"),
    (
        "missing campaign",
        'seeds = [0]\nscenarios = ["builtin:small-room"]\n' + GOOD_POLICY,
        "missing required key 'campaign'",
    ),
    ("unknown top key", HEAD + "colour = 1\n" + GOOD_POLICY, "colour: unknown key"),
    ("bad ID", HEAD.replace('"bad"', '"bad id"') + GOOD_POLICY, "campaign: expected an ID"),
    ("seed out of range", HEAD.replace("[0]", "[-1]") + GOOD_POLICY, "seeds[0]: expected an integer from 0"),
    ("duplicate seeds", HEAD.replace("[0]", "[3, 3]") + GOOD_POLICY, "seeds[1]: seed 3 is listed twice"),
    ("empty seeds", HEAD.replace("[0]", "[]") + GOOD_POLICY, "seeds: expected a non-empty array"),
    ("seed table", HEAD.replace("[0]", "{ start = 0 }") + GOOD_POLICY, "seeds: missing required key 'count'"),
    ("seed is a float", HEAD.replace("[0]", "[1.5]") + GOOD_POLICY, "seeds[0]: expected an integer"),
    ("no seeds", 'campaign = "bad"\nscenarios = ["builtin:small-room"]\n' + GOOD_POLICY, "scenarios[0]: no seeds"),
    (
        "empty scenarios",
        HEAD.replace('["builtin:small-room"]', "[]") + GOOD_POLICY,
        "scenarios: expected a non-empty array",
    ),
    (
        "bad scenario",
        HEAD.replace("builtin:small-room", "nowhere.json") + GOOD_POLICY,
        "scenarios[0]: scenario 'nowhere.json'",
    ),
    ("unknown builtin scenario", HEAD.replace("small-room", "moon") + GOOD_POLICY, "scenarios[0]"),
    (
        "repeated scenario",
        HEAD.replace('["builtin:small-room"]', '["builtin:small-room", { source = "builtin:small-room" }]')
        + GOOD_POLICY,
        "scenarios[1]: the scenario's content hash repeats scenarios[0]",
    ),
    (
        "scenario table key",
        HEAD.replace('["builtin:small-room"]', '[{ source = "builtin:small-room", seed = 1 }]') + GOOD_POLICY,
        "scenarios[0].seed: unknown key",
    ),
    ("no policies", HEAD, "missing required key 'policies'"),
    ("duplicate policy", HEAD + GOOD_POLICY + GOOD_POLICY, "policies[1].name: policy name 'g' is also policies[0]'s"),
    (
        "two sources",
        HEAD + '[[policies]]\nname = "g"\nbuiltin = "greedy"\nagent = "x"\n',
        "policies[0]: expected exactly one source",
    ),
    ("no source", HEAD + '[[policies]]\nname = "g"\n', "policies[0]: expected exactly one source"),
    (
        "unknown builtin",
        HEAD + '[[policies]]\nname = "g"\nbuiltin = "smart"\n',
        "policies[0].builtin: unknown built-in policy 'smart'",
    ),
    ("bad policy name", HEAD + '[[policies]]\nname = "-g"\nbuiltin = "greedy"\n', "policies[0].name: expected an ID"),
    (
        "missing records",
        HEAD + '[[policies]]\nname = "r"\nrecords = "nowhere"\n',
        "policies[0].records: folder 'nowhere' does not exist",
    ),
    (
        "python import",
        HEAD + '[[policies]]\nname = "p"\npython = "no_such_module_x:make"\n',
        "policies[0].python: module 'no_such_module_x' does not import",
    ),
    (
        "python name",
        HEAD + '[[policies]]\nname = "p"\npython = "campaign_hooks:nothing"\n',
        "policies[0].python: module 'campaign_hooks' has no attribute 'nothing'",
    ),
    (
        "python syntax",
        HEAD + '[[policies]]\nname = "p"\npython = "broken:make"\n',
        "policies[0].python: module 'broken' does not import: SyntaxError",
    ),
    ("empty agent", HEAD + '[[policies]]\nname = "a"\nagent = "  "\n', "policies[0].agent: the agent command is empty"),
    (
        "unsplittable agent",
        HEAD + '[[policies]]\nname = "a"\nagent = "python3 \\"x"\n',
        "policies[0].agent: cannot split",
    ),
    (
        "timeout with builtin",
        HEAD + GOOD_POLICY + "step_timeout = 2\n",
        "policies[0].step_timeout: step_timeout applies only",
    ),
    (
        "zero timeout",
        HEAD + '[[policies]]\nname = "a"\nagent = "x"\nstep_timeout = 0\n',
        "policies[0].step_timeout: expected a finite number",
    ),
    (
        "infinite timeout",
        HEAD + '[[policies]]\nname = "a"\nagent = "x"\nstep_timeout = inf\n',
        "policies[0].step_timeout: expected a finite number",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_campaign_files(tmp_path, case):
    _, text, expected = case
    folder = tmp_path / "c"
    path = write_campaign(folder, text, hooks=True)
    (folder / "broken.py").write_text("def make(:\n")
    results = tmp_path / "res"
    from ember.cli import main

    done = _in_process(main, ["evaluate", str(path), "-o", str(results)])
    assert done[0] == 2
    assert done[1] == ""
    lines = done[2].splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ember: {path}: "), lines
    assert expected in lines[0]
    assert not results.exists()


def _in_process(main, argv):
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def test_bad_results_directories_and_flags(tmp_path):
    from ember.cli import main

    path = write_campaign(tmp_path / "c", HEAD + GOOD_POLICY)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "mine.txt").write_text("keep")
    status, out, err = _in_process(main, ["evaluate", str(path), "-o", str(occupied)])
    assert (status, out) == (2, "") and "not empty and holds no campaign.json" in err
    assert snapshot(occupied) == {"mine.txt": b"keep"}
    a_file = tmp_path / "file"
    a_file.write_text("x")
    status, out, err = _in_process(main, ["evaluate", str(path), "-o", str(a_file)])
    assert (status, out) == (2, "") and "is a file" in err
    with pytest.raises(SystemExit) as stop:
        _in_process(main, ["evaluate", str(path), "-o", str(tmp_path / "r"), "--workers", "0"])
    assert stop.value.code == 2
    status, out, err = _in_process(main, ["evaluate", str(tmp_path / "missing.toml"), "-o", str(tmp_path / "r")])
    assert (status, out) == (2, "") and "cannot read the campaign file" in err
    assert not (tmp_path / "r").exists()


def test_an_unreachable_scheduler_is_bad_input(tmp_path):
    pytest.importorskip("distributed")
    path = write_campaign(tmp_path / "c", HEAD + GOOD_POLICY)
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")  # Dask's own setting, shortened
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--scheduler", "tcp://127.0.0.1:9", env=env)
    assert "--scheduler tcp://127.0.0.1:9: cannot connect to the Dask scheduler" in assert_one_line_error(done)
    assert not (tmp_path / "res").exists()


# -- export -------------------------------------------------------------------------------


def _expected_leaves(metrics, prefix=""):
    out = {}
    for key, value in metrics.items():
        name = prefix + key
        if name in ("people", "time.evacuation_steps"):
            continue
        if isinstance(value, dict):
            out.update(_expected_leaves(value, name + "."))
        elif not isinstance(value, str):
            out[name] = value
    return out


def test_export_csv(tmp_path):
    path = write_campaign(
        tmp_path / "c", BASIC + '\n[[policies]]\nname = "bad"\npython = "campaign_hooks:raises"\n', hooks=True
    )
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results, "--workers", "2").returncode == 0
    out = tmp_path / "rows.csv"
    done = ember_cli("export", results, "-o", out)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    text = out.read_bytes()
    assert ember_cli("export", results).stdout == text
    assert b"\r" not in text and text.endswith(b"\n")
    table = list(csv.reader(io.StringIO(text.decode())))
    header, body = table[0], table[1:]
    fixed = ["scenario_id", "scenario_hash", "seed", "policy", "status", "error", "steps", "elapsed_s"]
    assert header[:8] == fixed and header[8:] == sorted(header[8:])
    rows = read_rows(results)
    order = {"greedy": 0, "rnd": 1, "bad": 2}
    scen = {"small-room": 0, "tiny": 1}
    expected_rows = sorted(rows, key=lambda r: (order[r["policy"]], scen[r["scenario_id"]], r["seed"]))
    assert [(r[3], r[0], int(r[2])) for r in body] == [
        (r["policy"], r["scenario_id"], r["seed"]) for r in expected_rows
    ]
    names = set()
    for row in rows:
        if row["metrics"]:
            names |= set(_expected_leaves(row["metrics"]))
    assert header[8:] == sorted(names)
    assert "safety.casualties" in names and "exits.evacuations_per_exit.door" in names
    for line, row in zip(body, expected_rows):
        cells = dict(zip(header, line))
        assert cells["elapsed_s"] == repr(row["elapsed_s"])
        assert cells["error"] == (row["error"] or "")
        assert cells["steps"] == ("" if row["steps"] is None else str(row["steps"]))
        leaves = _expected_leaves(row["metrics"]) if row["metrics"] else {}
        for name in header[8:]:
            value = leaves.get(name)
            assert cells[name] == ("" if value is None else repr(value) if isinstance(value, float) else str(value))


def test_export_bad_input(tmp_path):
    done = ember_cli("export", tmp_path / "nothing")
    # The results layer's words, as rank and report say them (one reader for every command).
    assert "nothing: no such directory, expected a results directory" in assert_one_line_error(done)


def test_float_spelling_in_campaign_json_and_rows_is_json_dumps(tmp_path):
    """Regression: orjson writes 0.00005 where campaign.md §4 (json.dumps) requires 5e-05."""
    path = write_campaign(
        tmp_path / "c",
        f"""
campaign = "floats"
seeds = [0]
scenarios = ["builtin:small-room"]
[[policies]]
name = "greedy"
builtin = "greedy"
[[policies]]
name = "hasty"
agent = "{sys.executable} {EXAMPLE_AGENT}"
step_timeout = 5e-05
""",
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "res" / "campaign.json").read_bytes()
    assert b'"step_timeout":5e-05' in text
    lines = [text[:-1], *(tmp_path / "res" / "episodes.jsonl").read_bytes().splitlines()]
    assert len(lines) == 3
    for line in lines:
        reference = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert line == reference
