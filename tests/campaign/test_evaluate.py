"""``ember evaluate`` (ember.campaign.driver, campaign.md §3-4): the results layout, the progress bar,
bad results directories and flags."""

import gzip
import hashlib
import json
import os
import subprocess
import sys

import pytest

import ember
from ember.canonical import canonical_json

from helpers.campaigns import (
    BASIC,
    GOOD_POLICY,
    HEAD,
    SMALL,
    TINY,
    assert_one_line_error,
    builtin_metrics,
    by_key,
    ember_cli,
    in_process,
    read_rows,
    snapshot,
    write_campaign,
)
from helpers.ranking_results import assert_same

# -- the results directory ------------------------------------------------------


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


def test_bad_results_directories_and_flags(tmp_path):
    from ember.cli import main

    path = write_campaign(tmp_path / "c", HEAD + GOOD_POLICY)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "mine.txt").write_text("keep")
    status, out, err = in_process(main, ["evaluate", str(path), "-o", str(occupied)])
    assert (status, out) == (2, "") and "not empty and holds no campaign.json" in err
    assert snapshot(occupied) == {"mine.txt": b"keep"}
    a_file = tmp_path / "file"
    a_file.write_text("x")
    status, out, err = in_process(main, ["evaluate", str(path), "-o", str(a_file)])
    assert (status, out) == (2, "") and "is a file" in err
    with pytest.raises(SystemExit) as stop:
        in_process(main, ["evaluate", str(path), "-o", str(tmp_path / "r"), "--workers", "0"])
    assert stop.value.code == 2
    status, out, err = in_process(main, ["evaluate", str(tmp_path / "missing.toml"), "-o", str(tmp_path / "r")])
    assert (status, out) == (2, "") and "cannot read the campaign file" in err
    assert not (tmp_path / "r").exists()


def test_an_unreachable_scheduler_is_bad_input(tmp_path):
    pytest.importorskip("distributed")
    path = write_campaign(tmp_path / "c", HEAD + GOOD_POLICY)
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="1s")  # Dask's own setting, shortened
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--scheduler", "tcp://127.0.0.1:9", env=env)
    assert "--scheduler tcp://127.0.0.1:9: cannot connect to the Dask scheduler" in assert_one_line_error(done)
    assert not (tmp_path / "res").exists()
