"""Agent error messages that must say what went wrong, with real agent processes."""

import contextlib
import os
import shlex
import signal
import subprocess
import sys

import pytest

import ember
from ember.agent import AgentPolicy
from ember.errors import AgentError

TIMEOUT = 60  # only stops a hang


def _agent(tmp_path, body):
    path = tmp_path / "agent.py"
    path.write_text(body)
    return shlex.join([sys.executable, str(path)])


def _first_answer_error(tmp_path, body, step_timeout=30):
    scenario = ember.load_scenario("builtin:small-room")
    with AgentPolicy(_agent(tmp_path, body), scenario, step_timeout=step_timeout) as policy:
        with pytest.raises(AgentError) as caught:
            policy(ember.Simulator(scenario, 0).observe())
    return str(caught.value)


def test_agent_answer_starting_with_nul_is_reported_as_not_json(tmp_path):
    message = _first_answer_error(
        tmp_path,
        """
import sys
sys.stdin.readline(); sys.stdin.readline()
sys.stdout.buffer.write(b'\\x00{"a": "stay"}\\n'); sys.stdout.flush()
sys.stdin.readline()
""",
    )
    assert "codec" not in message and "utf-16" not in message
    assert message.startswith("step 1: the agent sent a line that is not JSON (Expecting value): ")


def test_agent_answer_that_is_not_utf8_names_the_byte(tmp_path):
    message = _first_answer_error(
        tmp_path,
        """
import sys
sys.stdin.readline(); sys.stdin.readline()
sys.stdout.buffer.write(b'{"a": "st\\xffay"}\\n'); sys.stdout.flush()
sys.stdin.readline()
""",
    )
    assert message.startswith("step 1: the agent sent a line that is not UTF-8 (byte 0xff at offset 9): ")


# The agent starts a child that inherits its stdout and sleeps, then exits with status 4
# without answering: its output stays open, but the agent is gone, not slow.
ORPHANING_AGENT = """
import pathlib, subprocess, sys
sys.stdin.readline(); sys.stdin.readline()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
pathlib.Path({pidfile!r}).write_text(str(child.pid))
sys.exit(4)
"""


def _kill_child(pidfile):
    """Kill the agent's orphaned child by its PID (it would hold the pipe for a minute)."""
    if pidfile.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_agent_that_exits_while_a_child_holds_its_output_is_reported_as_exited(tmp_path):
    body = ORPHANING_AGENT.format(pidfile=str(tmp_path / "child.pid"))
    try:
        message = _first_answer_error(tmp_path, body, step_timeout=20)
    finally:
        _kill_child(tmp_path / "child.pid")
    assert message == (
        "step 1: the agent exited with status 4 before answering the observation "
        "(a process it started still holds its standard output open)."
    )


def test_agent_that_exits_while_a_child_holds_its_output_cli(tmp_path):
    body = ORPHANING_AGENT.format(pidfile=str(tmp_path / "child.pid"))
    # stderr to a file, not a pipe: the child inherits it, and a pipe would stay open while it lives.
    errors = tmp_path / "stderr.txt"
    try:
        with open(errors, "wb") as stderr:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ember.cli",
                    "run",
                    "builtin:small-room",
                    "--sandbox",
                    "off",
                    "--agent",
                    _agent(tmp_path, body),
                    "--step-timeout",
                    "20",
                    "-o",
                    tmp_path / "r.record",
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                timeout=TIMEOUT,
            )
    finally:
        _kill_child(tmp_path / "child.pid")
    assert done.returncode == 2
    assert errors.read_text() == (
        "ember: step 1: the agent exited with status 4 before answering the observation "
        "(a process it started still holds its standard output open).\n"
    )


def test_agent_that_answers_then_exits_is_not_an_error_of_exit(tmp_path):
    # An answer written just before exiting is still taken (the exit check drains what arrived).
    body = """
import json, sys
sys.stdin.readline()
observation = json.loads(sys.stdin.readline())["observation"]
print(json.dumps({p["person_id"]: "stay" for p in observation["people"]}), flush=True)
"""
    scenario = ember.load_scenario("builtin:small-room")
    with AgentPolicy(_agent(tmp_path, body), scenario, step_timeout=20) as policy:
        observation = ember.Simulator(scenario, 0).observe()
        assert policy(observation) == {p["person_id"]: "stay" for p in observation["people"]}
