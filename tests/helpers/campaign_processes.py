"""Campaigns run as real processes: every process a run started, wherever it moved.

A run is tagged with an environment variable of its own (``EMBER_TEST_RUN``):
every process the command starts inherits it (workers, episode processes,
agents and their children), so ``tagged(tag)`` finds every process of a
campaign, whichever session or process group it moved to.
"""

import contextlib
import os
import shutil
import sys
import uuid

from helpers.campaigns import EXAMPLE_AGENT, wait_for

TAG_VARIABLE = "EMBER_TEST_RUN"


def new_tag():
    return uuid.uuid4().hex


def run_env(tag):
    """This process's environment with the run's tag."""
    return dict(os.environ, **{TAG_VARIABLE: tag})


def ember_command(*args):
    """The command line; ``evaluate`` with ``--sandbox off`` unless told: these runs are found by the tag
    in their environment, which only a policy outside the sandbox inherits (tests/isolation has the sandbox's)."""
    args = [str(arg) for arg in args]
    if args and args[0] == "evaluate" and "--sandbox" not in args:
        args += ["--sandbox", "off"]
    return [sys.executable, "-m", "ember.cli", *args]


def write_files(folder, files):
    """Write ``{name: text}`` under ``folder`` (created); returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def copy_greedy_agent(folder):
    shutil.copy(EXAMPLE_AGENT, folder / "greedy_agent.py")


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


#: A python policy module whose ``make`` starts a daemon: a child that leaves the session, then a
#: grandchild that child abandons.  ``make`` returns only once its daemon runs and has written its
#: pid to ``daemon-of-<starter pid>-<n>.pid`` beside the module: every episode leaves one to look for.
DAEMON_POLICY = """
import os, pathlib, time
from ember.sim.policies import GreedyPolicy

HERE = pathlib.Path(__file__).resolve().parent
STARTED = []


def start_daemon():
    STARTED.append(None)
    mine = HERE / f"daemon-of-{os.getpid()}-{len(STARTED)}.pid"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            part = mine.with_suffix(".tmp")
            part.write_text(str(os.getpid()))
            os.replace(part, mine)
            while True:
                time.sleep(1)
        os._exit(0)
    while not mine.exists():
        time.sleep(0.01)


def make(scenario):
    start_daemon()
    return GreedyPolicy(scenario)


def slow(scenario):
    # The same daemon, then a tenth of a second a step: an episode long enough to kill its worker in.
    greedy = make(scenario)

    def policy(observation):
        time.sleep(0.1)
        return greedy(observation)

    return policy
"""


#: The same module, starting a daemon as it is imported, too (the campaign's check imports it first).
IMPORT_DAEMON_POLICY = DAEMON_POLICY + "\nstart_daemon()\n"


def daemon_pids(folder):
    """The pids the daemons of ``DAEMON_POLICY`` in ``folder`` wrote."""
    return [int(path.read_text()) for path in sorted(folder.glob("daemon-*.pid"))]


def alive(pid):
    """True while ``pid`` runs (a zombie has ended)."""
    return _state(pid) not in (None, "Z", "X")


def assert_daemons_ended(folder, expected, timeout=30):
    """``expected`` daemons were started from ``folder``, and every one of them has ended."""
    pids = daemon_pids(folder)
    assert len(pids) == expected, f"expected {expected} daemons to have started, found {len(pids)}"
    try:
        wait_for(lambda: not any(map(alive, pids)), timeout=timeout, what="every daemon to end")
    except AssertionError:
        left = [pid for pid in pids if alive(pid)]
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        raise AssertionError(f"daemons started by the policy left alive: {left}") from None


def daemon_campaign(folder, module_text, factory="make", seeds="[0]"):
    """A one-policy campaign on ``builtin:small-room`` whose python policy is ``daemon:FACTORY`` of
    ``module_text``; returns the campaign file."""
    write_files(
        folder,
        {
            "daemon.py": module_text,
            "campaign.toml": f'campaign = "d"\nseeds = {seeds}\nscenarios = ["builtin:small-room"]\n'
            f'[[policies]]\nname = "daemon"\npython = "daemon:{factory}"\n',
        },
    )
    return folder / "campaign.toml"
