"""The ember command line: demo, metrics tables, progress, the error contract, help."""

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

import ember
from ember import progress
from ember.cli import build_parser
from ember.record.source import CHUNK_SIZE
from ember.summary import FAMILIES

from helpers.scenarios import make_scenario
from helpers.strict import assert_same_json


def ember_cli(*args, cwd=None, stdin=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        stdin=stdin,
        timeout=timeout,
    )


def assert_one_line_error(done):
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def office_record(tmp_path_factory):
    path = tmp_path_factory.mktemp("office") / "office.record"
    ember.run_episode(ember.load_scenario("builtin:office"), "greedy", 0, str(path))
    return str(path)


@pytest.fixture(scope="module")
def big_record(tmp_path_factory):
    """A valid record of about 10 MB: 240 people standing still for 300 steps."""
    folder = tmp_path_factory.mktemp("big")
    people = {f"p{i:03d}": (1 + i // 30, i % 30) for i in range(240)}
    scenario = make_scenario(30, 30, people=people, exits={"x": (0, 0)}, max_steps=300)
    sc_path, record = folder / "big.json", folder / "big.record"
    sc_path.write_text(json.dumps(scenario))
    ember.run_episode(scenario, "stay", 0, str(record))
    assert record.stat().st_size > progress.PROGRESS_MIN_BYTES
    return str(sc_path), str(record)


# --- demo ---------------------------------------------------------------------


def test_demo_writes_the_record_and_prints_the_summary(tmp_path):
    done = ember_cli("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    record = tmp_path / "ember-demo.record"
    metrics = ember.episode_metrics("builtin:office", str(record)).to_dict()
    out = done.stdout.decode()
    assert str(record) in out
    population = metrics["safety"]["population"]
    evacuated = metrics["safety"]["evacuated"]
    assert re.search(rf"evacuated +{evacuated} of {population} +{evacuated / population:.1%}", out)
    assert f"{metrics['time']['mean_person_time_to_safety']:.2f} steps" in out
    for label in ("casualties", "stranded", "blocked moves", "exit use"):
        assert label in out
    for exit_id, count in metrics["exits"]["evacuations_per_exit"].items():
        assert f"{exit_id} {count} (" in out


def test_demo_with_options(tmp_path):
    record = tmp_path / "room.record"
    done = ember_cli("demo", "--scenario", "builtin:small-room", "--seed", 5, "-o", record)
    assert done.returncode == 0, done.stderr
    expected = io.BytesIO()
    ember.run_episode(ember.load_scenario("builtin:small-room"), "greedy", 5, expected)
    assert record.read_bytes() == expected.getvalue()
    assert "Episode small-room, seed 5" in done.stdout.decode()


# --- metrics --format ---------------------------------------------------------------


def test_metrics_table_has_every_family_and_people_last(office_record):
    done = ember_cli("metrics", "builtin:office", office_record, "--format", "table")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    titles = [name for name in FAMILIES + ("people",) if name in lines]
    assert titles == list(FAMILIES) + ["people"]
    assert lines.index("people") > max(lines.index(name) for name in FAMILIES)
    # Aligned: in the people table, every row is as wide as its rule line (short of trailing blanks).
    people = lines[lines.index("people") + 1 :]
    rule = people[1]
    assert set(rule) == {"-", " "}
    assert len(people) == 2 + 20
    assert any(line.startswith("population") and line.endswith(" 20") for line in lines)


def test_metrics_json_is_the_default_and_compact_needs_json(office_record):
    default = ember_cli("metrics", "builtin:office", office_record)
    explicit = ember_cli("metrics", "builtin:office", office_record, "--format", "json")
    assert default.returncode == 0 and default.stdout == explicit.stdout
    assert_same_json(json.loads(default.stdout), ember.episode_metrics("builtin:office", office_record).to_dict())
    message = assert_one_line_error(
        ember_cli("metrics", "builtin:office", office_record, "--format", "table", "--compact")
    )
    assert message == "ember: --compact applies only to --format json."


# --- progress -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_no_progress_on_a_stderr_that_is_not_a_terminal(big_record, command, tmp_path):
    done = ember_cli(command, *big_record, *(["-o", tmp_path / "m.json"] if command == "metrics" else []))
    assert done.returncode == 0
    if command == "metrics":
        assert done.stderr == b""
    else:
        assert done.stderr == b"ember: the record replays byte-identically.\n"


def read_pty(master, process, timeout=60):
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has gone
                break
            if not data:
                break
            out += data
        elif process.poll() is not None:
            break
    return out


def stderr_on_a_terminal(args):
    """Run a command whose stderr is a pseudo-terminal; return what it showed there."""
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        shown = read_pty(master, process)
    finally:
        os.close(master)
    assert process.wait(10) == 0
    return shown


@pytest.mark.parametrize("command", ["metrics", "replay"])
def test_progress_on_a_terminal(big_record, command, tmp_path):
    args = [sys.executable, "-m", "ember.cli", command, *big_record]
    if command == "metrics":
        args += ["-o", str(tmp_path / "m.json")]
    shown = stderr_on_a_terminal(args)
    assert b"\rember: reading the record [" in shown
    assert b"% " in shown and b" MB" in shown
    size = os.path.getsize(big_record[1]) / 2**20
    assert f"/{size:,.1f} MB".encode() in shown
    # Erased when done: the bar's last character is followed by blanks and a carriage return.
    tail = shown.rsplit(b"MB", 1)[1]
    assert tail.strip(b" \r") in (b"", b"ember: the record replays byte-identically.\r\n")


def test_progress_is_throttled_and_passes_every_byte(tmp_path, monkeypatch):
    import tqdm.std  # the test extra has it

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    class Clock:
        """A clock the test moves: the throttle is checked without reading the wall clock."""

        def __init__(self, tick):
            self.now, self.tick = 0.0, tick

        def __call__(self):
            self.now += self.tick
            return self.now

    data = os.urandom(10 * 2**20)
    path = tmp_path / "data"
    path.write_bytes(data)
    pieces = -(-len(data) // CHUNK_SIZE)
    # A frozen clock: only the first draw; a clock a second ahead per reading: a redraw per piece read.
    for tick, expected in ((0.0, 1), (1.0, 1 + pieces)):
        with open(path, "rb") as opened:
            for source in (str(path), path, opened):
                monkeypatch.setattr(tqdm.std, "time", Clock(tick))
                terminal = Terminal()
                with progress.reading_progress(source, stream=terminal) as chunks:
                    assert chunks is not source
                    assert b"".join(chunks) == data
                redraws = terminal.getvalue().count("\r") - 2  # erasing the line writes two
                assert redraws == expected
                assert terminal.getvalue().endswith("\r")
    # Small, not a terminal, or of unknown size: the source is handed back untouched.
    small = tmp_path / "small"
    small.write_bytes(b"{}")
    for source, stream in ((str(small), Terminal()), (str(path), io.StringIO()), (io.BytesIO(data), Terminal())):
        with progress.reading_progress(source, stream=stream) as chunks:
            assert chunks is source
        assert stream.getvalue() == ""


# --- the error contract -------------------------------------------------------------------


@pytest.fixture
def bad_inputs(tmp_path, office_record):
    empty = tmp_path / "empty.record"
    empty.write_bytes(b"")
    return {
        "bad scenario path": ("no/such/scenario.json", office_record),
        "record is a directory": ("builtin:office", str(tmp_path)),
        "empty record": ("builtin:office", str(empty)),
        "missing record": ("builtin:office", str(tmp_path / "missing.record")),
    }


ERROR_CASES = ["bad scenario path", "record is a directory", "empty record", "missing record"]


@pytest.mark.parametrize(
    "case, command",
    [(case, ["metrics"]) for case in ERROR_CASES]
    + [(case, command) for case in ERROR_CASES[1:3] for command in (["replay"], ["render", "--ascii"])],
)
def test_error_contract(bad_inputs, case, command):
    scenario, record = bad_inputs[case]
    assert_one_line_error(ember_cli(command[0], scenario, record, *command[1:]))


def test_run_and_demo_errors(tmp_path):
    assert_one_line_error(ember_cli("run", "no/such/scenario.json"))
    assert_one_line_error(ember_cli("run", "builtin:nope"))
    assert_one_line_error(ember_cli("run", "builtin:office", "--seed", "-1"))
    assert_one_line_error(ember_cli("demo", "--scenario", "builtin:nope", cwd=tmp_path))
    assert_one_line_error(ember_cli("demo", "-o", tmp_path / "no" / "dir" / "r.record"))
    assert_one_line_error(ember_cli("bogus"))
    assert not (tmp_path / "ember-demo.record").exists()


# --- help -------------------------------------------------------------------------------


def test_every_command_and_option_has_help():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    expected = {
        "run",
        "metrics",
        "replay",
        "demo",
        "render",
        "scenarios",
        "rank",
        "report",
        "evaluate",
        "export",
        "generate",
        "suite",
    }
    assert set(subparsers.choices) >= expected
    helps = {a.dest: a.help for a in subparsers._choices_actions}
    for name, sub in subparsers.choices.items():
        assert helps.get(name), name
        for action in sub._actions:
            assert action.help, (name, action.dest)


@pytest.mark.parametrize("command", [[], ["run"], ["metrics"], ["replay"], ["demo"], ["render"], ["scenarios"]])
def test_help_exits_zero(command):
    done = ember_cli(*command, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith(b"usage: ember") and done.stderr == b""


def test_run_counts_steps_on_a_terminal_only(tmp_path):
    args = [sys.executable, "-m", "ember.cli", "run", "builtin:office", "-o", str(tmp_path / "r.record")]
    shown = stderr_on_a_terminal(args)
    assert b"\rember: step 1 of at most 500" in shown
    done = ember_cli("run", "builtin:office", "-o", tmp_path / "quiet.record")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (tmp_path / "quiet.record").read_bytes() == (tmp_path / "r.record").read_bytes()
