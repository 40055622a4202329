"""The launcher of policy processes and ``ember run --agent --sandbox required|off``."""

import json
import os
import shlex
import subprocess
import sys

from ember.isolation.boundary import agent_files, python_files
from ember.isolation.environment import FIXED_ENVIRONMENT

from helpers.sandboxes import modes, open_folder, private_folder, write_file

ENV_AGENT = """
import json, os, sys
print(json.dumps(dict(os.environ)), file=sys.stderr, flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "observation":
        print(json.dumps({p["person_id"]: "stay" for p in message["observation"]["people"]}), flush=True)
    elif message["type"] == "end":
        break
"""


def ember_run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", "run", "builtin:small-room", *args],
        capture_output=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_run_agent_runs_an_agent_under_a_0700_folder_and_changes_no_permission():
    # A 0700 folder the sandbox's uid cannot pass: the binds are made with root's rights, so that does not
    # matter; the agent's own file is 0644.
    with private_folder() as folder:
        assert os.stat(os.path.dirname(folder)).st_mode & 0o777 == 0o700
        agent = write_file(folder, "agent.py", ENV_AGENT)
        record = os.path.join(folder, "run.record")
        before = modes(folder)
        done = ember_run("--agent", shlex.join([sys.executable, agent]), "-o", record, cwd=folder)
        assert done.returncode == 0, done.stderr
        assert os.path.exists(record)
        after = modes(folder)
        assert {path: mode for path, mode in after.items() if path in before} == before


def test_run_agent_refuses_an_agent_file_the_sandbox_uid_cannot_read_naming_it_and_the_fix(tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text(ENV_AGENT)
    agent.chmod(0o600)
    record = tmp_path / "run.record"
    done = ember_run("--agent", shlex.join([sys.executable, str(agent)]), "-o", str(record), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines == [
        f"ember: the sandbox cannot run here: the sandbox's uid 65534 cannot read {agent} (the policy's files): "
        f"a file without o+r; make it readable: chmod o+r {agent}; "
        "--sandbox off runs the policies with the operator's rights."
    ]
    assert not record.exists()
    assert agent.stat().st_mode & 0o777 == 0o600
    off = ember_run("--agent", shlex.join([sys.executable, str(agent)]), "--sandbox", "off", cwd=tmp_path)
    assert off.returncode == 0, off.stderr


def test_the_sandbox_has_the_fixed_environment_off_the_operators_and_the_record_is_the_same(monkeypatch):
    monkeypatch.setenv("EMBER_TEST_OPERATOR", "yes")
    with open_folder() as folder:
        write_file(folder, "agent.py", ENV_AGENT)
        command = shlex.join([sys.executable, "agent.py"])
        runs = {mode: ember_run("--agent", command, "--sandbox", mode, cwd=folder) for mode in ("required", "off")}
    for done in runs.values():
        assert done.returncode == 0, done.stderr
    assert json.loads(runs["required"].stderr.decode().splitlines()[0]) == FIXED_ENVIRONMENT
    assert json.loads(runs["off"].stderr.decode().splitlines()[0])["EMBER_TEST_OPERATOR"] == "yes"
    assert runs["required"].stdout == runs["off"].stdout


def test_sandbox_applies_only_with_an_agent():
    done = ember_run("--sandbox", "off", cwd=os.getcwd())
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == "ember: --sandbox applies only with --agent or --python.\n"


def test_a_policys_own_files():
    with open_folder() as folder:
        package = os.path.join(folder, "agents")
        os.makedirs(package)
        write_file(folder, "agents/net.py", "")
        module = write_file(folder, "solo.py", "")
        write_file(folder, "run_agent.py", "")
        assert python_files("agents.net:make_policy", folder) == [package]
        assert python_files("solo:make", folder) == [module]
        assert python_files("json:loads", folder) == []  # the Python installation's, bound as a whole
        assert agent_files("python3 run_agent.py --fast", folder) == [os.path.join(folder, "run_agent.py")]
        assert agent_files("python3 /etc/hostname", folder) == []
        assert agent_files("./run_agent.py", folder) == [os.path.join(folder, "run_agent.py")]


def test_episode_timeout_ends_an_episode_whose_every_answer_is_in_time():
    from ember.agent import AgentPolicy
    from ember.engine.run import measure_run
    from ember.errors import AgentError
    from ember.isolation.boundary import Launcher
    from ember.scenario import compile_scenario, load_scenario

    scenario = compile_scenario(load_scenario("builtin:office"))
    with open_folder() as folder:
        slow = write_file(
            folder,
            "slow.py",
            ENV_AGENT.replace("for line in sys.stdin:", "import time\nfor line in sys.stdin:\n    time.sleep(0.3)"),
        )
        launcher = Launcher("required", files=[slow], cwd=folder)
        agent = AgentPolicy(
            [sys.executable, slow],
            scenario.data,
            5,
            launch=launcher,
            episode_timeout=1.0,
            episode_timeout_name="policies[0].episode_timeout",
            stderr=subprocess.DEVNULL,
        )
        try:
            with agent:
                measure_run(scenario, agent, 0, live=False)
            raise AssertionError("the episode ran to its end")
        except AgentError as exc:
            message = str(exc)
    assert message.endswith(": the episode did not end within 1 s (policies[0].episode_timeout).")
    assert message.startswith("step ")
