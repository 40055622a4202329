"""Results directories for the results-layer tests (tests/results/): a campaign folder, readers, snapshots.

``write_campaign_folder`` makes the campaign of ``tests/results/conftest.py``'s
``kept_campaign`` fixture (one ``ember evaluate --keep-records`` run).

The campaign has built-in policies (records kept), a ``records`` entry
(records submitted next to the campaign file, one of them gzip'ed) and a
scenario given by path, so every way ``ember verify`` finds a record and a
scenario is there.  ``builtin:office`` has casualties under every policy.
"""

import contextlib
import gzip
import io
import json
import os
import stat
import subprocess
import sys

from ember.canonical import canonical_json
from ember.record.writer import run_episode
from ember.scenario import compile_scenario
from ember.sim.policies import make_policy

from helpers.scenarios import make_scenario

ROOM = make_scenario(
    3,
    5,
    people={"a": (1, 1), "b": (1, 3)},
    exits={"out": (0, 2)},
    ignitions=[(2, 0)],
    p="1/2",
    max_steps=20,
    scenario_id="room",
)
SEEDS = (0, 1)
CAMPAIGN = """campaign = "kept"
seeds = [0, 1]
scenarios = ["builtin:office", "room.json"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "stay"
builtin = "stay"

[[policies]]
name = "team"
records = "subs"
"""


def ember_cli(*args, cwd=None, timeout=120):
    """The command in its own process; the timeout stops a hang (it never decides pass or fail)."""
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def in_process(*args):
    """(exit status, stdout text, stderr text) of ``ember ARGS`` run in this process."""
    from ember.cli import main

    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    out.flush()
    err.flush()
    return status, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


def snapshot(folder):
    """{relative path: bytes} of every regular file under ``folder``; a link or another node as what it is.

    Nothing but a regular file is read: a FIFO would block, ``/dev/zero`` never end.
    """
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    value = handle.read()
            elif stat.S_ISLNK(info.st_mode):
                value = ("link", os.readlink(path))
            else:
                value = ("node", stat.S_IFMT(info.st_mode))
            found[os.path.relpath(path, folder)] = value
    return found


def write_campaign_folder(folder):
    """The campaign file, its scenario file and the submitted records; returns the campaign file's path."""
    folder.mkdir(parents=True)
    (folder / "room.json").write_bytes(canonical_json(ROOM))
    for source, scenario_id in (("builtin:office", "office-floor"), (ROOM, "room")):
        scenario = compile_scenario(source)
        for seed in SEEDS:
            out = io.BytesIO()
            run_episode(scenario, make_policy("greedy", scenario, seed), seed, out)
            place = folder / "subs" / scenario_id
            place.mkdir(parents=True, exist_ok=True)
            if seed == 1:  # one compressed submission: its record_sha256 is of the decompressed bytes
                (place / f"{seed}.record.gz").write_bytes(gzip.compress(out.getvalue(), mtime=0))
            else:
                (place / f"{seed}.record").write_bytes(out.getvalue())
    path = folder / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


def rows(results):
    return [json.loads(line) for line in (results / "episodes.jsonl").read_bytes().splitlines()]


def rewrite_rows(results, rows_):
    from ember.canonical import canonical_json_reference

    (results / "episodes.jsonl").write_bytes(b"".join(canonical_json_reference(r) + b"\n" for r in rows_))


def rewrite_board(results, rows_):
    """``rewrite_rows``, then ranking.json made again from them as ``ember rank`` makes it: a consistent forgery."""
    from ember.ranking import ranking_bytes, ranking_of
    from ember.results import read_results

    rewrite_rows(results, rows_)
    (results / "ranking.json").write_bytes(ranking_bytes(ranking_of(read_results(results))))


def line_of(rows_, policy, scenario_id, seed):
    """The 1-based line of the row of (policy, scenario, seed)."""
    return next(
        i for i, r in enumerate(rows_, 1) if (r["policy"], r["scenario_id"], r["seed"]) == (policy, scenario_id, seed)
    )
