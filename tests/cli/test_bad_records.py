"""The command line under hostile records (``ember metrics``/``ember replay``): one ``ember:`` line on
stderr, exit status 2, nothing on stdout; Ctrl-C exits with 130.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import ember

from helpers.hostile_input import HEAD, LIMITED, LIMITED_RECORD
from helpers.strict import assert_same_json

# --- the command line -------------------------------------------------------------------


def ember_cli(*args, stdin=None, input=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        stdin=stdin,
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )


def assert_refused(result):
    """Exactly one line on stderr starting with 'ember:', exit status 2, nothing on stdout."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, (result.returncode, err)
    assert result.stdout == b""
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("ember: "), err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    scenario = folder / "scenario.json"
    scenario.write_text(json.dumps(LIMITED))
    (folder / "empty.record").write_bytes(b"")
    (folder / "garbage.record").write_bytes(bytes(random.Random(5).randrange(256) for _ in range(5000)))
    (folder / "truncated.record").write_bytes(LIMITED_RECORD[: len(LIMITED_RECORD) // 2])
    (folder / "a-directory").mkdir()
    return folder, scenario


@pytest.mark.parametrize("command", ["metrics", "replay"])
@pytest.mark.parametrize(
    "record", ["a-directory", "empty.record", "garbage.record", "truncated.record", "missing/x.record", "unreadable"]
)
def test_cli_refuses_bad_records(cli_files, command, record):
    folder, scenario = cli_files
    path = folder / record
    if record == "unreadable":
        path = folder / f"unreadable-{command}.record"
        if os.geteuid() == 0:
            # root reads a chmod 000 file; a symlink loop is unreadable to everyone.
            path.symlink_to(path.name)
        else:
            path.write_bytes(LIMITED_RECORD)
            path.chmod(0)
    assert_refused(ember_cli(command, scenario, path))


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_cli_refuses_a_pipe_that_closes_early(cli_files, command):
    folder, scenario = cli_files
    half = LIMITED_RECORD[: len(LIMITED_RECORD) // 2]
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdout.buffer.write({half!r})"], stdout=subprocess.PIPE
    )
    try:
        result = ember_cli(command, scenario, "-", stdin=writer.stdout)
    finally:
        writer.stdout.close()
        writer.wait(timeout=10)
    assert_refused(result)
    assert "truncated" in result.stderr.decode()


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_cli_exits_cleanly_on_ctrl_c(cli_files, command):
    folder, scenario = cli_files
    process = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", command, str(scenario), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        process.stdin.write(HEAD)  # a record that goes on and never ends
        process.stdin.flush()
        # Wait until it blocks reading the pipe (or 3 s, where /proc hides
        # wchan): a SIGINT while Python is still importing is another story.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{process.pid}/wchan") as handle:
                    if "pipe" in handle.read():
                        break
            except OSError:
                pass
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert out == b""
    assert err.count(b"\n") == 1 and err.startswith(b"ember: ") and b"Traceback" not in err, err


def test_cli_measures_a_good_record(cli_files):
    folder, scenario = cli_files
    (folder / "good.record").write_bytes(LIMITED_RECORD)
    result = ember_cli("metrics", scenario, folder / "good.record")
    assert result.returncode == 0, result.stderr
    assert_same_json(json.loads(result.stdout), ember.episode_metrics(LIMITED, LIMITED_RECORD).to_dict())
