"""``ember trajectories``: the library's bytes in files or on stdout, live pipes, and the error contract."""

import gzip
import io
import json
import os
import subprocess
import sys

import pytest

import ember
from ember.interop.geometry import geometry_document
from ember.interop.scale import Scale
from ember.interop.trajectories import write_trajectories

SCENARIO = "builtin:small-room"
TIMEOUT = 120  # only stops a hang


def ember_cli(*args, cwd=None, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, cwd=cwd, stdin=stdin, timeout=TIMEOUT
    )


def one_line_error(done):
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


def library_bytes(record, scale=None):
    out = io.BytesIO()
    write_trajectories(SCENARIO, record, out, scale)
    return out.getvalue()


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "greedy.json"
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", 0, str(path))
    return path


def test_help_states_the_defaults_and_their_source():
    done = ember_cli("trajectories", "--help")
    text = " ".join(done.stdout.decode().split())
    assert done.returncode == 0
    assert "--cell-size M metres per grid cell (default: 0.4, Burstedde et al., 2001)" in text
    assert "--step-seconds S seconds per step (default: 0.3, Burstedde et al., 2001)" in text
    assert "x = (col + 1/2) * cell, y = (rows - row - 1/2) * cell" in text


def test_file_stdout_and_geometry_are_the_library_s(record, tmp_path):
    done = ember_cli("trajectories", SCENARIO, record, "-o", "t.txt", "--geometry", "g.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert done.stderr.decode() == "ember: wrote t.txt (0.4 m cells, 0.3 s steps).\nember: wrote g.json.\n"
    assert (tmp_path / "t.txt").read_bytes() == library_bytes(record)
    assert json.loads((tmp_path / "g.json").read_text()) == geometry_document(ember.load_scenario(SCENARIO))
    on_stdout = ember_cli("trajectories", SCENARIO, record, "--cell-size", "0.5", "--step-seconds", "0.25")
    assert (on_stdout.returncode, on_stdout.stderr) == (0, b"")
    assert on_stdout.stdout == library_bytes(record, Scale("0.5", "0.25"))
    assert ember_cli("trajectories", SCENARIO, record, "-o", "-").stdout == library_bytes(record)


def test_a_live_pipe_from_ember_run_and_a_compressed_record(record, tmp_path):
    ember_command = f"{sys.executable} -m ember.cli"
    command = f"{ember_command} run {SCENARIO} --seed 0 | {ember_command} trajectories {SCENARIO} - -o piped.txt"
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "piped.txt").read_bytes() == library_bytes(record)
    packed = tmp_path / "r.json.gz"
    packed.write_bytes(gzip.compress(record.read_bytes()))
    assert ember_cli("trajectories", SCENARIO, packed).stdout == library_bytes(record)


def damaged_records(record, folder):
    data = record.read_bytes()
    truncated, mismatched = folder / "truncated.json", folder / "mismatched.json"
    truncated.write_bytes(data[: len(data) // 2])
    # another seed: every line parses and passes stage 2; the replay fails, at the end
    mismatched.write_bytes(data.replace(b'"seed":0', b'"seed":7', 1))
    return truncated, mismatched


@pytest.mark.parametrize("where", ["file", "stdout"])
def test_a_record_that_fails_writes_nothing(record, tmp_path, where):
    folder = tmp_path / "in"
    folder.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_bytes(b"kept\n")
    for bad in damaged_records(record, folder):
        target = ["-o", "old.txt"] if where == "file" else []
        done = ember_cli("trajectories", SCENARIO, bad, *target, "--geometry", "g.json", cwd=out)
        line = one_line_error(done)
        assert "$." in line or "replay" in line, line
        assert sorted(os.listdir(out)) == ["old.txt"]
        assert (out / "old.txt").read_bytes() == b"kept\n"


@pytest.mark.parametrize("option", ["--cell-size", "--step-seconds"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "abc", "", "1e-9", "1e9"])
def test_a_bad_scale_is_one_line_and_nothing_written(record, tmp_path, option, value):
    done = ember_cli("trajectories", SCENARIO, record, "-o", "t.txt", f"{option}={value}", cwd=tmp_path)
    line = one_line_error(done)
    assert line.startswith(f"ember: argument {option}: the "), line
    assert os.listdir(tmp_path) == []


def test_bad_arguments_are_refused_before_reading(record, tmp_path):
    cases = [
        (["--geometry", "-"], "--geometry needs a file name"),
        (["-o", "same.json", "--geometry", "same.json"], "name the same file"),
    ]
    for extra, words in cases:
        done = ember_cli("trajectories", SCENARIO, record, *extra, cwd=tmp_path)
        assert words in one_line_error(done)
    assert "missing key 'schema_version'" in one_line_error(
        ember_cli("trajectories", '{"grid": 1}', record, cwd=tmp_path)
    )
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_geometry_that_cannot_be_written_leaves_no_trajectories(record, tmp_path):
    for target in (["-o", "t.txt"], []):  # a file, or standard output: nothing there either
        line = one_line_error(
            ember_cli("trajectories", SCENARIO, record, *target, "--geometry", "/dev/full", cwd=tmp_path)
        )
        assert line == "ember: /dev/full: No space left on device"
        assert os.listdir(tmp_path) == []
    # Trajectories that cannot be written on standard output leave no geometry file.
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ember.cli", "trajectories", SCENARIO, str(record), "--geometry", "g.json"],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            timeout=TIMEOUT,
        )
    assert (done.returncode, done.stderr) == (2, b"ember: standard output: No space left on device\n")
    assert os.listdir(tmp_path) == []


def test_every_file_error_names_its_path(record, tmp_path):
    (tmp_path / "folder").mkdir()
    cases = [
        ([SCENARIO, "no-such.record", "-o", "t.txt"], "'no-such.record': No such file or directory"),
        ([SCENARIO, "folder", "-o", "t.txt"], "'folder': Is a directory"),
        (["no-such.json", record, "-o", "t.txt"], "'no-such.json': No such file or directory"),
        ([SCENARIO, record, "-o", "nowhere/t.txt"], "nowhere/t.txt: No such file or directory"),
        (
            [SCENARIO, record, "-o", "t.txt", "--geometry", "nowhere/g.json"],
            "nowhere/g.json: No such file or directory",
        ),
        ([SCENARIO, record, "-o", "folder"], "folder: Is a directory"),
        ([SCENARIO, record, "-o", "t.txt", "--geometry", "folder"], "folder: Is a directory"),
        ([SCENARIO, record, "-o", ""], "argument -o/--output: expected a file name, got ''"),
        ([SCENARIO, record, "--geometry", ""], "argument --geometry: expected a file name, got ''"),
    ]
    for argv, words in cases:
        line = one_line_error(ember_cli("trajectories", *argv, cwd=tmp_path))
        assert words in line, (argv, line)
        assert os.listdir(tmp_path) == ["folder"] and os.listdir(tmp_path / "folder") == []
