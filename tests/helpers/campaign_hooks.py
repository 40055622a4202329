"""Test-only python policies for tests/test_campaign*.py (never shipped in src/).

They are named in test campaign files as ``python = "campaign_hooks:NAME"``
after the test copies this file next to the campaign file.  Their control
folder is the environment variable EMBER_TEST_HOOK_DIR (inherited by local
worker processes and by the Dask workers a test starts).
"""

import os
import signal
import time

from ember.sim.policies import GreedyPolicy

#: A blocked attempt gives up after this long, so a broken test cannot leave a process behind for ever.
BLOCK_LIMIT_S = 120


def _dir():
    return os.environ["EMBER_TEST_HOOK_DIR"]


def _claim(name):
    """True for exactly one caller across all processes: creates ``name`` exclusively."""
    try:
        os.close(os.open(os.path.join(_dir(), name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def _worker_pid():
    """The worker running this episode: a python policy runs in an episode process the worker started."""
    return os.getppid()


def _write_pid():
    path = os.path.join(_dir(), "pid")
    with open(path + ".tmp", "w") as handle:
        handle.write(str(_worker_pid()))
    os.replace(path + ".tmp", path)


def greedy(scenario):
    return GreedyPolicy(scenario)


def blocking(scenario):
    """The first episode made anywhere writes its worker's PID to DIR/pid and waits for the worker to be killed.

    All other episodes play greedy.
    """
    if _claim("claimed"):
        _write_pid()
        deadline = time.monotonic() + BLOCK_LIMIT_S
        while time.monotonic() < deadline:
            time.sleep(0.05)
        raise RuntimeError("nobody killed the blocked worker")
    return GreedyPolicy(scenario)


def dies(scenario):
    """Every attempt notes itself (DIR/attempt-N) and kills its worker process."""
    for n in range(1000):
        if _claim(f"attempt-{n}"):
            break
    os.kill(_worker_pid(), signal.SIGKILL)
    time.sleep(BLOCK_LIMIT_S)


def raises(scenario):
    def policy(observation):
        raise ZeroDivisionError("the policy divides by zero")

    return policy


def slow(scenario):
    def policy(observation):
        time.sleep(5)
        return {}

    return policy


def illegal(scenario):
    def policy(observation):
        return {p["person_id"]: "fly" for p in observation["people"]}

    return policy


def escapes(scenario):
    """Raises at step 1 with terminal controls in its message: ESC (a colour), BEL, U+202E."""

    def policy(observation):
        raise RuntimeError("\x1b[31mred\x07 and \u202ereversed")

    return policy


def rewrites_rows(scenario):
    """The first episode made anywhere waits for a row in DIR/results/episodes.jsonl, then replaces the file
    with an empty one (a racing rewrite: the command's rows now go to a file nobody reads); then plays greedy."""
    if _claim("rewrote"):
        with open(os.path.join(_dir(), "results")) as handle:
            episodes = os.path.join(handle.read(), "episodes.jsonl")
        deadline = time.monotonic() + BLOCK_LIMIT_S
        while time.monotonic() < deadline and not (os.path.exists(episodes) and os.path.getsize(episodes)):
            time.sleep(0.02)
        with open(episodes + ".new", "wb"):
            pass
        os.replace(episodes + ".new", episodes)
    return GreedyPolicy(scenario)
