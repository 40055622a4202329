"""Every command of the table, with broken standard streams and unwritable outputs.

Parametrised from ``ember.cli.COMMANDS``: a new row is covered by
construction, once it has a sample invocation in ``SAMPLES`` (tests/helpers/command_samples.py; a test fails
until it does).  Real processes; a closed stream is the descriptor itself
closed (``sh -c '... >&-'``), ``/dev/full`` a real full device, a full disk
a real file-size limit (``RLIMIT_FSIZE``, which makes every write past it
fail with ``EFBIG`` as a full disk fails with ``ENOSPC``).
"""

import os
import re
import resource
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

import ember
from ember.cli import COMMANDS, build_parser

from helpers.command_samples import SAMPLES, SCENARIO
from helpers.service import SampleService

TIMEOUT = 120  # only stops a hang
CLOSE = {"stdout": ">&-", "stderr": "2>&-"}
CAMPAIGN = """
campaign = "tiny"
seeds = [0]
scenarios = ["builtin:small-room"]

[[policies]]
name = "greedy"
builtin = "greedy"
"""
TORN = b'{"torn'


class Inputs:
    """What the samples read: a record, a campaign file, its results directory (with a torn last line)."""

    def __init__(self, base):
        self.base = base
        self.record = base / "greedy.record"
        ember.run_episode(ember.load_scenario(SCENARIO), "greedy", 0, str(self.record))
        self.campaign = base / "campaign.toml"
        self.campaign.write_text(CAMPAIGN)
        self.results = base / "results"
        done = ember_process("evaluate", self.campaign, "-o", self.results, "--workers", "1")
        assert done.returncode == 0, done.stderr
        # A torn last line: rank, report, export and evaluate (resuming) warn about it on stderr.
        with open(self.results / "episodes.jsonl", "ab") as handle:
            handle.write(TORN)
        self.copies = 0
        # A running service with one closed submission: 'service reverify' and 'submit' read it.
        self.service = SampleService(str(base), str(self.campaign), str(self.record), "small-room")

    def results_copy(self):
        """A fresh copy of the results directory (evaluate resumes it: no episode runs, one warning)."""
        self.copies += 1
        copy = self.base / f"results-copy-{self.copies}"
        shutil.copytree(self.results, copy)
        return copy


#: The file name each command's output option expects (render decides the image format by it).
OUTPUT_NAMES = {"render": "out.png", "report": "out.html", "evaluate": "results"}

ROWS = {row.name: row for row in COMMANDS}
WITH_OUTPUT = [row.name for row in COMMANDS if row.output is not None]
#: (command, option) for every output-path option of every command of the table.
OUTPUT_OPTIONS = [
    (row.name, option) for row in COMMANDS for option in ((row.output,) if row.output else ()) + row.more_outputs
]


def ember_process(*args, cwd=None, stdout=subprocess.PIPE, close=None, file_size=None):
    """Run ``ember ARGS``: ``close`` names a standard stream to close; ``file_size`` limits file sizes."""
    argv = [sys.executable, "-m", "ember.cli", *map(str, args)]
    if close is not None:
        argv = ["sh", "-c", f'exec "$@" {CLOSE[close]}', "sh", *argv]

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run(
        argv,
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=cwd,
        timeout=TIMEOUT,
        preexec_fn=None if file_size is None else limit,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    made = Inputs(tmp_path_factory.mktemp("inputs"))
    yield made
    made.service.close()


def sample(name, inputs, out=None):
    return [str(a) for a in SAMPLES[name](inputs, out)]


def writes_stdout(name, argv):
    """What the table says about this invocation."""
    return ROWS[name].writes_stdout(build_parser().parse_args(argv))


def one_error_line(done):
    """The single error line on stderr of a failed run (after the input's warnings, if any); never a traceback."""
    text = done.stderr.decode()
    assert "Traceback" not in text, text
    assert done.returncode != 0, text
    lines = [line for line in text.splitlines() if not line.startswith("ember: warning: ")]
    assert len(lines) == 1 and text.endswith("\n") and lines[0].startswith("ember: "), text
    assert text.endswith(lines[0] + "\n"), text  # the error comes last
    return lines[0]


def test_every_command_has_a_sample():
    assert set(SAMPLES) == set(ROWS), "add a sample invocation of each new command to SAMPLES"


def test_the_samples_write_stdout_where_the_table_says():
    # The matrix below tests both branches: commands whose sample writes stdout, and those whose does not.
    class Paths:
        record = campaign = results = "x"
        service = SimpleNamespace(data="x", url="http://127.0.0.1:9", token_file="x", source="x", job="x")

        def results_copy(self):
            return "x"

    silent = {name for name in ROWS if not writes_stdout(name, sample(name, Paths()))}
    assert silent == {"replay", "report"}


@pytest.mark.parametrize("name", list(ROWS))
def test_closed_stdout(inputs, tmp_path, name):
    argv = sample(name, inputs)
    done = ember_process(*argv, cwd=tmp_path, close="stdout")
    if writes_stdout(name, argv):
        line = one_error_line(done)
        assert done.returncode == 2
        assert line == f"ember: standard output is closed: 'ember {name}' writes its result there; nothing done."
        assert os.listdir(tmp_path) == []  # nothing done: no record, no page
        if name == "evaluate":  # the results directory untouched: the torn line still there, no ranking redone
            assert (inputs.base / f"results-copy-{inputs.copies}" / "episodes.jsonl").read_bytes().endswith(TORN)
    else:
        normal = ember_process(*argv, cwd=tmp_path)
        assert normal.returncode == 0, normal.stderr
        assert (done.returncode, done.stderr) == (0, normal.stderr)


@pytest.mark.parametrize("name", list(ROWS))
def test_closed_stderr_changes_nothing_on_stdout(inputs, tmp_path, name):
    normal = ember_process(*sample(name, inputs), cwd=tmp_path)
    assert normal.returncode == 0, normal.stderr
    done = ember_process(*sample(name, inputs), cwd=tmp_path, close="stderr")
    assert done.returncode == 0
    assert done.stdout == normal.stdout  # no warning, no message, no progress: only the result


def test_warnings_are_there_to_be_lost(inputs, tmp_path):
    # The commands reading the torn results directory do warn, so the test above is not vacuous.
    for name in ("rank", "report", "export", "evaluate", "verify"):
        done = ember_process(*sample(name, inputs), cwd=tmp_path)
        assert done.returncode == 0 and b"ember: warning: " in done.stderr and TORN not in done.stdout, name


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", WITH_OUTPUT)
def test_output_on_dev_full_names_the_path(inputs, tmp_path, name):
    done = ember_process(*sample(name, inputs, "/dev/full"), cwd=tmp_path)
    line = one_error_line(done)
    assert done.returncode == 2 and "/dev/full" in line
    assert done.stdout == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", list(ROWS))
def test_stdout_on_dev_full_names_the_stream(inputs, tmp_path, name):
    argv = sample(name, inputs)
    with open("/dev/full", "wb") as full:
        done = ember_process(*argv, cwd=tmp_path, stdout=full)
    # What the command says on stderr anyway (evaluate: its summary, after the campaign ran), then the error.
    normal = ember_process(*sample(name, inputs), cwd=tmp_path)
    assert normal.returncode == 0, normal.stderr
    if not writes_stdout(name, argv):
        # A command that writes nothing there is not disturbed by it (test_the_samples_write_stdout_... pins which).
        assert (done.returncode, same_copy(done.stderr.decode())) == (0, same_copy(normal.stderr.decode()))
        return
    assert done.returncode == 2
    expected = normal.stderr.decode() + "ember: standard output: No space left on device\n"
    assert same_copy(done.stderr.decode()) == same_copy(expected)


def same_copy(text):
    """``text`` with the name of each copy of the results directory made the same."""
    return re.sub(r"results-copy-[0-9]+", "results-copy-N", text)


@pytest.mark.parametrize("name", WITH_OUTPUT)
def test_a_full_disk_names_the_path(inputs, tmp_path, name):
    out = tmp_path / OUTPUT_NAMES.get(name, "out")
    if name == "evaluate":
        out = inputs.results_copy()
    done = ember_process(*sample(name, inputs, out), cwd=tmp_path, file_size=0)
    line = one_error_line(done)
    assert done.returncode == 2 and str(out) in line and "File too large" in line, line
    assert done.stdout == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", ["", *ROWS])
def test_help_on_a_closed_or_full_stdout(name):
    argv = [name, "--help"] if name else ["--help"]
    done = ember_process(*argv, close="stdout")
    assert one_error_line(done) == "ember: standard output: Bad file descriptor"
    with open("/dev/full", "wb") as full:
        done = ember_process(*argv, stdout=full)
    assert one_error_line(done) == "ember: standard output: No space left on device"
    assert done.returncode == 2


def with_outputs(name, inputs, folder, values):
    """The sample of ``name`` with each output option given: ``values[option]``, else a new path in ``folder``."""
    row = ROWS[name]

    def value(option, default):
        return str(values.get(option, folder / default))

    out = value(row.output, OUTPUT_NAMES.get(name, "out")) if row.output else None
    argv = sample(name, inputs, out)
    for option in row.more_outputs:
        argv += [option, value(option, option.lstrip("-"))]
    return argv


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name, option", OUTPUT_OPTIONS)
def test_one_output_on_dev_full_writes_none_of_the_others(inputs, tmp_path, name, option):
    # Every output of the command is written, or none: /dev/full for one of them leaves nothing at the others.
    argv = with_outputs(name, inputs, tmp_path, {option: "/dev/full"})
    done = ember_process(*argv, cwd=tmp_path)
    line = one_error_line(done)
    # Refused up front (demo, render, evaluate need a regular file or a directory) or failed writing: said.
    assert done.returncode == 2 and "/dev/full" in line, line
    assert done.stdout == b"" and os.listdir(tmp_path) == []


@pytest.mark.parametrize("name, option", OUTPUT_OPTIONS)
def test_an_empty_output_path_is_refused_naming_the_option(inputs, tmp_path, name, option):
    argv = with_outputs(name, inputs, tmp_path, {option: ""})
    done = ember_process(*argv, cwd=tmp_path)
    line = one_error_line(done)
    assert done.returncode == 2 and done.stdout == b""
    assert line.startswith(f"ember: argument {option}") and "expected a file name, got '' (an empty path" in line, line
    assert os.listdir(tmp_path) == []
