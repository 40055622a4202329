"""``ember run SCENARIO --python MODULE:NAME``: a campaign's python policy, one episode, real processes."""

import os
import subprocess
import sys

import pytest

import ember

from helpers.sandboxes import open_folder, write_file

GREEDY_COPY = """
from ember.sim.policies import make_policy


def make(scenario):
    return make_policy("greedy", scenario, 0)


not_callable = 3
"""
RAISES = """
def make(scenario):
    def policy(observation):
        return {p["person_id"]: "stay" for p in observation["people"] if p["status"] == "active"}
    return policy
"""


def ember_run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", "run", *map(str, args)], capture_output=True, cwd=cwd, timeout=300
    )


def one_line_error(done):
    assert (done.returncode, done.stdout) == (2, b"")
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def folder():
    with open_folder() as made:
        write_file(made, "greedy_copy.py", GREEDY_COPY)
        write_file(made, "raises.py", RAISES)
        yield made


def builtin_record(folder, seed):
    path = os.path.join(folder, f"greedy-{seed}.record")
    ember.run_episode(ember.load_scenario("builtin:office"), "greedy", seed, path)
    with open(path, "rb") as handle:
        return handle.read()


def test_a_python_policy_writes_the_record_of_the_policy_it_runs_to_a_file_and_to_stdout(folder):
    expected = builtin_record(folder, 3)
    to_file = ember_run("builtin:office", "--python", "greedy_copy:make", "--sandbox", "off", "--seed", 3, "-o",
                        "py.record", cwd=folder)  # fmt: skip
    assert (to_file.returncode, to_file.stdout, to_file.stderr) == (0, b"", b"")
    with open(os.path.join(folder, "py.record"), "rb") as handle:
        assert handle.read() == expected
    to_stdout = ember_run("builtin:office", "--python", "greedy_copy:make", "--sandbox", "off", "--seed", 3, cwd=folder)
    assert (to_stdout.returncode, to_stdout.stderr) == (0, b"")
    assert to_stdout.stdout == expected


def test_a_python_policy_runs_in_the_sandbox_by_default_with_the_same_record(folder):
    """The campaign's launcher with ``required``: needs a machine whose Python uid 65534 may read (.ci/run)."""
    done = ember_run("builtin:office", "--python", "greedy_copy:make", "--seed", 1, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout == builtin_record(folder, 1)


def test_the_sandbox_is_required_unless_off_and_refused_before_anything_is_written(tmp_path):
    # pytest's tmp_path is under a 0700 folder: the sandbox's uid cannot reach the module.
    (tmp_path / "greedy_copy.py").write_text(GREEDY_COPY)
    line = one_line_error(ember_run("builtin:office", "--python", "greedy_copy:make", "-o", "x.record", cwd=tmp_path))
    assert line.startswith("ember: the sandbox cannot run here: the sandbox's uid 65534 cannot read ")
    assert line.endswith("--sandbox off runs the policies with the operator's rights.")
    assert not (tmp_path / "x.record").exists()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("greedy_copy:nope", "ember: --python: module 'greedy_copy' has no attribute 'nope'."),
        ("greedy_copy:not_callable", "ember: --python: greedy_copy.not_callable is not callable (a int)."),
        ("nomodule:make", "ember: --python: module 'nomodule' does not import: ModuleNotFoundError: "
                          "No module named 'nomodule'"),
        ("greedy_copy", "ember: argument --python: expected MODULE:NAME, got 'greedy_copy' (see 'ember run --help')."),
        (":make", "ember: argument --python: expected MODULE:NAME, got ':make' (see 'ember run --help')."),
    ],
)  # fmt: skip
def test_a_module_that_cannot_make_a_policy_is_refused_before_the_record_is_written(folder, source, message):
    done = ember_run("builtin:office", "--python", source, "--sandbox", "off", "-o", "bad.record", cwd=folder)
    assert one_line_error(done) == message
    assert not os.path.exists(os.path.join(folder, "bad.record"))


def test_a_policy_that_raises_is_one_line_naming_the_step(folder):
    done = ember_run("builtin:office", "--python", "raises:make", "--sandbox", "off", "-o", "r.record", cwd=folder)
    assert done.returncode == 2 and done.stdout == b""
    # The host's traceback passes through on stderr (as an agent's stderr does); the last line is EMBER's.
    assert done.stderr.decode().splitlines()[-1] == "ember: step 1: the python policy raised KeyError: 'status'"


@pytest.mark.parametrize("option", [["--sandbox", "off"], ["--step-timeout", "2"]])
def test_the_options_of_foreign_policies_need_agent_or_python(option):
    done = ember_run("builtin:office", *option, cwd=os.getcwd())
    assert one_line_error(done) == f"ember: {option[0]} applies only with --agent or --python."


def test_python_and_agent_and_policy_exclude_each_other():
    for other in (["--agent", "x"], ["--policy", "greedy"]):
        line = one_line_error(ember_run("builtin:office", "--python", "a:b", *other, cwd=os.getcwd()))
        assert line == f"ember: argument {other[0]}: not allowed with argument --python (see 'ember run --help')."
