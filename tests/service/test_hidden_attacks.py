"""A hostile bundle on the hidden track (service.md §6, isolation.md §2): it tries to learn the secret seeds and
to reach what is not its own; the sandbox refuses each try and the job still ends with honest rows.

The bundle's python policy tries, at import and when it makes its policy:
the database file, service.toml, its job's campaign file (the seeds) and
results directory, the record store, another team's unpacked bundle, a
TCP connection to the server on the host's loopback; it lists DATA and
its jobs and writes into DATA.  Each try prints one line on its stderr,
which the team reads back as its job's ``stderr_tail`` after the reveal.  Without the
sandbox every one of them succeeds (the policy runs as the server's
user); in it the reads and the connection fail, the listings show only
the path to its own files, and the write lands in its private /tmp.
"""

import json
import os

import pytest

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService, wait_folder_gone
from helpers.service import ember

ATTACK = """
import os
import socket
import sys

TARGETS = {targets!r}
FOLDERS = {folders!r}
PORT = {port}


def attempt(name, action):
    try:
        action()
    except Exception as exc:
        print(f"probe {{name}}: blocked ({{type(exc).__name__}})", file=sys.stderr, flush=True)
    else:
        print(f"probe {{name}}: REACHED", file=sys.stderr, flush=True)


def read(path):
    def action():
        if os.path.isdir(path):
            if not os.listdir(path):
                raise FileNotFoundError(path)
        else:
            with open(path, "rb") as handle:
                handle.read(1)
    return action


def listing(name, path):
    try:
        found = sorted(os.listdir(path))
    except Exception as exc:
        found = type(exc).__name__
    print(f"list {{name}}: {{found!r}}", file=sys.stderr, flush=True)


def write(path):
    def action():
        with open(path, "wb") as handle:
            handle.write(b"owned")
    return action


def connect():
    with socket.create_connection(("127.0.0.1", PORT), timeout=5):
        pass


def attack():
    for name, path in sorted(TARGETS.items()):
        attempt(name, read(path))
    for name, path in sorted(FOLDERS.items()):
        listing(name, path)
    # Into its own view of DATA: under the sandbox's private /tmp when DATA is under /tmp, else refused.
    try:
        write(os.path.join(FOLDERS["data"], "owned"))()
    except Exception:
        pass
    attempt("network", connect)


attack()


def make_policy(scenario):
    def policy(observation):
        return {{person["person_id"]: "stay" for person in observation["people"]}}
    return policy
"""


@pytest.fixture
def hidden():
    made = HiddenService(hidden_seeds=1, teams=("alpha", "beta"))
    yield made
    made.close()


def test_a_bundle_reaching_for_the_seeds_the_database_data_and_the_network_is_refused(hidden):
    server = hidden.serve()
    honest = hidden.submit("beta", python_bundle(os.path.join(hidden.root, "honest.tar.gz"), name="honest"))
    assert hidden.wait_job("beta", honest)["state"] == "done"
    targets = {
        "database": os.path.join(hidden.data, "ember.db"),
        "service-toml": os.path.join(hidden.data, "service.toml"),
        "signing-key": os.path.join(hidden.data, "signing.key"),
        "records": os.path.join(hidden.data, "records"),
        "other-bundle": os.path.join(hidden.data, "bundles", f"{honest}.tar.gz"),
        "bundles": os.path.join(hidden.data, "bundles"),
        # Its own job's id is not known in advance: relative to its working directory, the campaign folder.
        "own-campaign": "ember-job.toml",
        "own-results": os.path.join("..", "results"),
        "own-scenarios": os.path.join("..", "hidden-scenarios"),
    }
    folders = {"data": hidden.data, "jobs": os.path.join(hidden.data, "jobs")}
    source = ATTACK.format(targets=targets, folders=folders, port=server.port)
    attacker = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "attack.tar.gz"), policy=source))
    status = hidden.wait_job("alpha", attacker)
    assert (status["state"], status["done"], status["failures"]) == ("done", 1, []), status
    wait_folder_gone(hidden.data, honest)  # the other job's folder goes
    # The team reads its own stderr after the reveal (service.md §9), with every probe's line.
    assert "stderr_tail" not in status
    ember("service", "board", "reveal", hidden.data, "office")
    status = hidden.job("alpha", attacker).json()
    probes = [line for line in status["stderr_tail"] if line.startswith("probe ")]
    names = sorted([*targets, "network"])
    assert sorted(line.split()[1].rstrip(":") for line in probes) == names, status["stderr_tail"]
    reached = [line for line in probes if "REACHED" in line]
    assert reached == [], reached
    # Of DATA it sees the path to its own files, nothing else: DATA holds "jobs", which holds one job, its own.
    lists = {
        line.split()[1].rstrip(":"): line.split(": ", 1)[1] for line in status["stderr_tail"] if line[:5] == "list "
    }
    assert lists == {"data": "['jobs']", "jobs": f"[{attacker!r}]"}, status["stderr_tail"]
    assert not os.path.exists(os.path.join(hidden.data, "owned"))
    # The team's view names no seed; the rows are honest: the same totals as the honest bundle's.
    seeds = [key[2] for key in hidden.secret()["keys"]]
    text = json.dumps(status)
    assert [seed for seed in seeds if str(seed) in text] == []
    assert status["scenarios"] == hidden.job("beta", honest).json()["scenarios"]
