"""Test helpers for campaigns run as real processes: the command, its rows, and every process it started.

A run is tagged with an environment variable of its own (``EMBER_TEST_RUN``):
every process the command starts inherits it (workers, episode processes,
agents and their children), so ``tagged(tag)`` finds every process of a
campaign, whichever session or process group it moved to.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

from ember.canonical import canonical_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GREEDY_AGENT = os.path.join(REPO, "examples", "greedy_agent.py")
SRC = os.path.join(REPO, "src")
TAG_VARIABLE = "EMBER_TEST_RUN"
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


def new_tag():
    return uuid.uuid4().hex


def run_env(tag=None, **more):
    env = dict(os.environ, **more)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    if tag is not None:
        env[TAG_VARIABLE] = tag
    return env


def ember_command(*args):
    return [sys.executable, "-m", "ember.cli", *map(str, args)]


def ember_cli(*args, cwd=None, env=None, timeout=180):
    return subprocess.run(
        ember_command(*args), capture_output=True, cwd=cwd, env=env or run_env(), timeout=timeout, check=False
    )


def write_files(folder, files):
    """Write ``{name: text}`` under ``folder`` (created); returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def copy_greedy_agent(folder):
    shutil.copy(GREEDY_AGENT, folder / "greedy_agent.py")


def read_rows(results):
    """The rows of ``results``, checked canonical and whole (the file ends with a newline)."""
    data = (results / "episodes.jsonl").read_bytes()
    assert data == b"" or data.endswith(b"\n"), "a torn last row"
    lines = data.split(b"\n")[:-1]
    rows = [json.loads(line) for line in lines]
    for line, row in zip(lines, rows):
        assert line == canonical_json(row)
        assert set(row) == ROW_KEYS
    return rows


def by_key(rows):
    keyed = {}
    for row in rows:
        key = (row["policy"], row["scenario_hash"], row["seed"])
        assert key not in keyed, f"two rows for {key}"
        keyed[key] = row
    return keyed


def wait_for(condition, timeout=90, what="a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()[0].decode()


def tagged(tag):
    """{pid: command line} of every live (not zombie) process whose environment carries ``tag``."""
    marker = f"{TAG_VARIABLE}={tag}".encode()
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if marker in environ and _state(name) not in (None, "Z", "X"):
            found[int(name)] = command
    return found


def assert_none_left(tag, timeout=30):
    """Every process of the tagged run ends (the command's own death signals take a moment)."""
    try:
        wait_for(lambda: not tagged(tag), timeout=timeout, what="every process of the campaign to end")
    except AssertionError:
        left = tagged(tag)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        raise AssertionError(f"processes of the campaign left alive: {left}") from None
