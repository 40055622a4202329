"""Hostile campaigns (tests/isolation/test_hostile_campaigns.py): a greedy baseline, an honest competitor
(greedy as a python module) and one attacker, evaluated for real; what an honest result looks like.

Every attacker plays greedy, so its honest numbers are greedy's: a row of
it is honest when it failed or when its metrics are greedy's for the same
episode.  Each attack is a module (or an agent) that tried, on the code
before the sandbox, to change a published number or to see what it must
not (docs/isolation.md says what the sandbox stops).
"""

import json
import os
import shlex
import subprocess
import sys

from helpers.campaigns import read_rows
from helpers.sandboxes import write_file

SEEDS = (7424971, 8015463)  # distinctive: neither appears by chance in a log
SCENARIO = "builtin:office"
COMPETITOR = """
# competitor-secret-weights: what no other policy may read
from ember.sim.policies import GreedyPolicy

def make(scenario):
    return GreedyPolicy(scenario)
"""
#: What every attacker module starts with: greedy, and the ways the old code let it find EMBER's things.
PRELUDE = """
import gc, json, os, signal, struct, sys, threading, time
from ember.sim.policies import GreedyPolicy

HERE = os.path.dirname(os.path.abspath(__file__))  # the campaign folder, where the other policies are

def tasks():
    # The old episode process held its task (seed, results directory) in memory.
    found = []
    for item in gc.get_objects():
        try:
            if isinstance(item, dict) and "results" in item and "seed" in item and "policy" in item:
                found.append(item)
        except Exception:
            pass
    return found

def pipes(pid="self", skip=(0, 1, 2)):
    found = []
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            if int(name) not in skip and os.readlink(f"/proc/{pid}/fd/{name}").startswith("pipe:"):
                found.append(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass
    return found

def forged_frame(scenario):
    from ember.engine.run import measure_run
    from ember.scenario import compile_scenario
    import ember.sim.fire as fire
    fire.FireSpread.ignitions = lambda self, step: []
    metrics = measure_run(compile_scenario(scenario), "greedy", 0, live=False).metrics.to_dict()
    payload = json.dumps({"ok": [metrics, None]}).encode()
    return struct.pack("<cQ", b"R", len(payload)) + payload

def write_to(path, data):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return True
    except OSError:
        return False

def own_pipes():
    own = set()
    for fd in (0, 1, 2):
        try:
            own.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return own

def foreign_pipes(pid):
    # The pipes pid holds that are not this process's own standard streams.
    own = own_pipes()
    found = []
    for path in pipes(pid, skip=()):
        try:
            if os.readlink(path) not in own:
                found.append(path)
        except OSError:
            pass
    return found

def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
"""


def campaign_text(attacker_entry, attacker_keys="", attacker_last=False):
    """The campaign: the attacker first (its episodes run before the others') or last, greedy, the competitor."""
    seeds = ", ".join(map(str, SEEDS))
    head = f'campaign = "hostile"\nseeds = [{seeds}]\nscenarios = ["{SCENARIO}"]\n'
    attacker = "" if attacker_entry is None else f'[[policies]]\nname = "attacker"\n{attacker_entry}\n{attacker_keys}'
    others = (
        '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
        '[[policies]]\nname = "competitor"\npython = "competitor:make"\n'
    )
    return head + (others + attacker if attacker_last else attacker + others)


def python_attacker(body):
    """A campaign entry and module file for an attacker written as a python policy."""
    return 'python = "attacker:make"', {"attacker.py": PRELUDE + body}


def agent_attacker(body):
    """A campaign entry and program for an attacker written as an agent (greedy's example agent after ``body``)."""
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
    with open(os.path.join(example, "greedy_agent.py"), encoding="utf-8") as handle:
        greedy = handle.read()
    command = shlex.join([sys.executable, "attacker.py"])
    return f"agent = {json.dumps(command)}", {"attacker.py": PRELUDE + body + "\n" + greedy}


def write_hostile_campaign(folder, attacker=None, keys="", attacker_last=False):
    """The campaign in ``folder`` (world-readable, for the sandbox's uid): its path."""
    write_file(folder, "competitor.py", COMPETITOR)
    entry = None
    if attacker is not None:
        entry, files = attacker
        for name, text in files.items():
            write_file(folder, name, text)
    return write_file(folder, "campaign.toml", campaign_text(entry, keys, attacker_last))


def evaluate(campaign, results, *flags, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", "evaluate", str(campaign), "-o", str(results), "--keep-records", *flags],
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def honest_rows(results):
    """The rows of ``results`` without their wall times, by (policy, seed)."""
    rows = {}
    for row in read_rows(results):
        rows[(row["policy"], row["seed"])] = {key: value for key, value in row.items() if key != "elapsed_s"}
    return rows


def attacker_is_honest(rows):
    """Every attacker row failed, or its metrics are greedy's for the same seed."""
    for seed in SEEDS:
        row = rows[("attacker", seed)]
        if row["status"] != "failed" and row["metrics"] != rows[("greedy", seed)]["metrics"]:
            return False
    return True


def logs_text(results):
    """Everything the results directory's logs hold."""
    text = []
    for folder, _, names in os.walk(os.path.join(results, "logs")):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                text.append(handle.read().decode("utf-8", "replace"))
    return "\n".join(text)
