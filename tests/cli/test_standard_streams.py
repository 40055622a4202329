"""Closed standard streams, with real processes whose fd 1 or 2 is closed.

``stdout=subprocess.DEVNULL`` is an open descriptor; these tests close the
descriptor itself (``sh -c '... >&-'``), as a careless caller might.
"""

import json
import subprocess
import sys

import pytest

import ember

from helpers.strict import assert_same_json

SCENARIO = "builtin:small-room"
TIMEOUT = 60  # only stops a hang
CLOSE = {"stdout": ">&-", "stderr": "2>&-"}


def ember_closed(stream, *args, cwd=None):
    """Run ``ember ARGS`` with the standard ``stream`` closed; the other one is captured."""
    command = " ".join(["exec", '"$@"', CLOSE[stream]])
    argv = ["sh", "-c", command, "sh", sys.executable, "-m", "ember.cli", *map(str, args)]
    return subprocess.run(argv, capture_output=True, timeout=TIMEOUT, cwd=cwd)


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "greedy.record"
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", 0, str(path))
    return path


def _stdout_commands(record, folder):
    return {
        "metrics": ("metrics", SCENARIO, record),
        "metrics-dash": ("metrics", SCENARIO, record, "-o", "-"),
        "run": ("run", SCENARIO),
        "render-ascii": ("render", SCENARIO, record, "--ascii"),
        "scenarios": ("scenarios",),
        "demo": ("demo", "-o", folder / "demo.record"),
    }


@pytest.mark.parametrize("name", ["metrics", "metrics-dash", "run", "render-ascii", "scenarios", "demo"])
def test_closed_stdout_is_a_one_line_error_and_nonzero_exit(record, tmp_path, name):
    args = _stdout_commands(record, tmp_path)[name]
    done = ember_closed("stdout", *args)
    assert done.returncode == 2
    command = args[0]
    assert done.stderr.decode() == (
        f"ember: standard output is closed: 'ember {command}' writes its result there; nothing done.\n"
    )
    assert not (tmp_path / "demo.record").exists()


def test_closed_stdout_does_not_stop_commands_that_write_files(record, tmp_path):
    # Files opened while fd 1 is closed would get fd 1: nothing may be written into them by mistake.
    out = tmp_path / "m.json"
    done = ember_closed("stdout", "metrics", SCENARIO, record, "-o", out)
    assert (done.returncode, done.stderr) == (0, b"")
    assert_same_json(json.loads(out.read_text()), ember.episode_metrics(SCENARIO, str(record)).to_dict())
    run = tmp_path / "r.record"
    done = ember_closed("stdout", "run", SCENARIO, "-o", run)
    assert (done.returncode, done.stderr) == (0, b"")
    assert run.read_bytes() == record.read_bytes()
    done = ember_closed("stdout", "replay", SCENARIO, record)
    assert done.returncode == 0
    assert done.stderr == b"ember: the record replays byte-identically.\n"


def test_closed_stderr_errors_never_reach_stdout(tmp_path, record):
    bad = tmp_path / "bad.record"
    bad.write_bytes(record.read_bytes()[:-10])
    for args in (
        ("metrics", SCENARIO, bad),
        ("replay", SCENARIO, bad),
        ("render", SCENARIO, bad, "--ascii"),
        ("run", "builtin:nonesuch"),
        ("metrics", SCENARIO, tmp_path / "missing.record"),
        ("metrics", SCENARIO, bad, "--bogus-option"),
    ):
        done = ember_closed("stderr", *args)
        assert done.returncode == 2, args
        assert done.stdout == b"", args


def test_closed_stderr_success_still_writes_the_result(record):
    done = ember_closed("stderr", "metrics", SCENARIO, record)
    assert done.returncode == 0
    assert_same_json(json.loads(done.stdout), ember.episode_metrics(SCENARIO, str(record)).to_dict())


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("scenarios",), ("run", "builtin:office")])
def test_unwritable_stdout_is_a_one_line_error(args):
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ember.cli", *args], stdout=full, stderr=subprocess.PIPE, timeout=TIMEOUT
        )
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: ") and "No space left on device" in lines[0]
