"""The agent protocol (docs/agent-protocol.md), driven with real agent subprocesses."""

import json
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember.agent import AgentPolicy
from ember.canonical import canonical_json
from ember.cli import main
from ember.errors import AgentError

ROOT = Path(__file__).resolve().parents[1]
GREEDY_AGENT = ROOT / "examples" / "greedy_agent.py"

# A small agent body: reads messages, answers "stay" for everybody, and lets
# each test change one thing through the hooks below.
AGENT_TEMPLATE = """
import json, sys, time

def answer(observation):
    return json.dumps({{p["person_id"]: "stay" for p in observation["people"]}})

{hooks}

for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "observation":
        step = message["observation"]["step"]
        print(respond(step, message["observation"]), flush=True)
    elif message["type"] == "end":
        break
"""


def ember_cli(*args, timeout=60):
    """The command in its own process.  The protocol's agents run with ``--sandbox off`` (they write
    their logs into the test's folder); the sandbox is tested in tests/isolation, and the example
    agent below runs in it too."""
    args = list(args)
    if "--agent" in args and "--sandbox" not in args:
        args[1:1] = ["--sandbox", "off"] if args[0] == "run" else []
    return subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, timeout=timeout)


def write_agent(tmp_path, hooks, name="agent.py"):
    path = tmp_path / name
    path.write_text(AGENT_TEMPLATE.format(hooks=textwrap.dedent(hooks)))
    return shlex.join([sys.executable, str(path)])


def stderr_lines(done):
    return done.stderr.decode().splitlines()


def assert_rejected_by_metrics(scenario, record):
    done = ember_cli("metrics", scenario, record)
    assert done.returncode == 2
    assert done.stdout == b""
    assert len(stderr_lines(done)) == 1
    assert "truncated" in done.stderr.decode()


@pytest.mark.parametrize("sandbox", ["required", "off"])
@pytest.mark.parametrize("scenario, seed", [("builtin:office", 3), ("builtin:small-room", 11)])
def test_example_greedy_agent_writes_the_same_bytes_as_the_builtin_greedy(tmp_path, scenario, seed, sandbox):
    by_agent, by_policy = tmp_path / "agent.record", tmp_path / "policy.record"
    agent = shlex.join([sys.executable, str(GREEDY_AGENT)])
    done = ember_cli("run", scenario, "--agent", agent, "--sandbox", sandbox, "--seed", seed, "-o", by_agent)
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == (b"", b"")
    assert ember_cli("run", scenario, "--policy", "greedy", "--seed", seed, "-o", by_policy).returncode == 0
    assert by_agent.read_bytes() == by_policy.read_bytes()
    assert ember_cli("metrics", scenario, by_agent).returncode == 0


def test_agent_to_stdout_and_its_stderr_passes_through(tmp_path):
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            print(f"agent log {step}", file=sys.stderr, flush=True)
            return answer(observation)
    """,
    )
    done = ember_cli("run", "builtin:small-room", "--agent", agent)
    assert done.returncode == 0, done.stderr
    expected = tmp_path / "stay.record"
    final_state = ember.run_episode(ember.load_scenario("builtin:small-room"), "stay", 0, str(expected))
    assert done.stdout == expected.read_bytes()
    assert stderr_lines(done) == [f"agent log {t}" for t in range(1, final_state["step"] + 1)]


def test_messages_scenario_observations_end_in_order_and_never_the_seed(tmp_path):
    log = tmp_path / "messages.jsonl"
    agent = write_agent(
        tmp_path,
        f"""
        LOG = open({str(log)!r}, "w")
        def respond(step, observation):
            return answer(observation)
        _loads = json.loads
        def logged(line):
            LOG.write(line if isinstance(line, str) else line.decode())
            LOG.flush()
            return _loads(line)
        json.loads = logged
    """,
    )
    record = tmp_path / "run.record"
    done = ember_cli("run", "builtin:office", "--agent", agent, "--seed", 987654321, "-o", record)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    messages = [json.loads(line) for line in lines]
    scenario = ember.load_scenario("builtin:office")
    assert messages[0] == {"type": "scenario", "scenario": scenario}
    assert "987654321" not in log.read_text() and "seed" not in log.read_text()
    # Observations are the simulator's own, one per step, then the end with the record's final state.
    sim = ember.Simulator(scenario, 987654321)
    parsed = json.loads(record.read_bytes())
    for step, message in zip(parsed["steps"], messages[1:-1]):
        assert message == {"type": "observation", "observation": sim.observe()}
        sim.step(step["actions"])
    assert len(messages) == len(parsed["steps"]) + 2
    assert messages[-1] == {"type": "end", "final_state": parsed["final_state"]}
    # Each message is one canonical JSON line.
    assert lines[1].encode() == canonical_json(messages[1])


def test_slow_agent_times_out_at_its_step_and_the_partial_record_is_rejected(tmp_path):
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            if step == 3:
                time.sleep(60)
            return answer(observation)
    """,
    )
    record = tmp_path / "slow.record"
    done = ember_cli("run", "builtin:office", "--agent", agent, "--step-timeout", "0.5", "-o", record)
    assert done.returncode == 2
    assert done.stdout == b""
    assert stderr_lines(done) == ["ember: step 3: the agent did not answer within 0.5 s (--step-timeout)."]
    # The header, initial-state and steps-opening lines, then steps 1 and 2, each flushed.
    assert record.read_bytes().count(b"\n") == 5
    assert json.loads(record.read_bytes().splitlines()[-1].rstrip(b","))["step"] == 2
    assert_rejected_by_metrics("builtin:office", record)


def test_agent_that_never_reads_cannot_hang_ember(tmp_path):
    # A scenario message far larger than a pipe buffer: writing it must not block EMBER.
    walls = [[r, c] for r in range(1, 300, 2) for c in range(1, 299)]
    scenario = {
        "schema_version": "1.0",
        "scenario_id": "big",
        "grid": {"rows": 300, "cols": 300},
        "walls": walls,
        "exits": [{"exit_id": "x", "position": [0, 0]}],
        "people": [{"person_id": "p", "position": [0, 5]}],
        "fire": {"ignitions": [], "spread_probability": "0/1", "enter_fire": "casualty"},
        "termination": {"max_steps": 5},
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(scenario))
    assert path.stat().st_size > 256 * 1024  # pipe buffers are 64 KiB on Linux
    deaf = tmp_path / "deaf.py"
    deaf.write_text("import time\ntime.sleep(60)\n")
    done = ember_cli(
        "run", path, "--agent", shlex.join([sys.executable, str(deaf)]), "--step-timeout", "0.5", "-o", tmp_path / "r"
    )
    assert done.returncode == 2
    assert stderr_lines(done) == ["ember: step 1: the agent did not answer within 0.5 s (--step-timeout)."]


def test_crashing_agent(tmp_path):
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            if step == 2:
                print("agent: giving up", file=sys.stderr, flush=True)
                sys.exit(3)
            return answer(observation)
    """,
    )
    record = tmp_path / "crash.record"
    done = ember_cli("run", "builtin:office", "--agent", agent, "-o", record)
    assert done.returncode == 2
    assert stderr_lines(done) == [
        "agent: giving up",
        "ember: step 2: the agent exited with status 3 before answering the observation.",
    ]
    assert_rejected_by_metrics("builtin:office", record)


def test_agent_that_dies_mid_line(tmp_path):
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            sys.stdout.write('{"p0')
            sys.stdout.flush()
            sys.exit(0)
    """,
    )
    done = ember_cli("run", "builtin:office", "--agent", agent, "-o", tmp_path / "r")
    assert done.returncode == 2
    assert stderr_lines(done) == [
        "ember: step 1: the agent exited with status 0 in the middle of its answer line '{\"p0'."
    ]


LIES = {
    "unknown person": (
        'json.dumps(dict(json.loads(answer(observation)), ghost="stay"))',
        "ember: step 2: the agent sent illegal actions: action for 'ghost', who is not an active person.",
    ),
    "missing person": (
        '"{}"',
        "ember: step 2: the agent sent illegal actions: no action for active person 'p00'.",
    ),
    "illegal action": (
        'answer(observation).replace("stay", "fly", 1)',
        "ember: step 2: the agent sent illegal actions: person 'p00' has unknown action 'fly'; "
        "expected one of stay, north, south, west, east.",
    ),
    "not JSON": (
        '"moving north"',
        "ember: step 2: the agent sent a line that is not JSON (Expecting value): 'moving north'.",
    ),
    "blank line": ('""', "ember: step 2: the agent sent a line that is not JSON (Expecting value): ''."),
    "not an object": (
        '"[\\"north\\"]"',
        "ember: step 2: the agent sent an array, not a JSON object {person_id: action}: '[\"north\"]'.",
    ),
    "duplicate key": (
        '"{\\"p00\\": \\"stay\\", \\"p00\\": \\"north\\"}"',
        'ember: step 2: the agent sent a line that is not JSON (duplicate key \'p00\'): \'{"p00": "stay", "p00": "north"}\'.',  # noqa: E501 - whole message, greppable
    ),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_lying_agent(tmp_path, lie):
    expression, message = LIES[lie]
    agent = write_agent(
        tmp_path,
        f"""
        def respond(step, observation):
            return answer(observation) if step == 1 else {expression}
    """,
    )
    record = tmp_path / "lie.record"
    done = ember_cli("run", "builtin:office", "--agent", agent, "-o", record)
    assert done.returncode == 2
    assert done.stdout == b""
    assert stderr_lines(done) == [message]
    assert_rejected_by_metrics("builtin:office", record)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--policy", "stay", "--agent", "x"],
            "ember: argument --agent: not allowed with argument --policy (see 'ember run --help').",
        ),
        (
            ["--agent", "no-such-agent-program"],
            "ember: cannot start the agent 'no-such-agent-program': No such file or directory.",
        ),
        (["--agent", "'unbalanced"], 'ember: cannot parse the agent command "\'unbalanced": No closing quotation.'),
        (["--agent", "   "], "ember: the agent command is empty."),
        (["--step-timeout", "2"], "ember: --step-timeout applies only with --agent or --python."),
    ],
)
def test_agent_option_errors(args, message):
    done = ember_cli("run", "builtin:office", *args)
    assert done.returncode == 2
    assert done.stdout == b""
    assert stderr_lines(done) == [message]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_step_timeout_must_be_a_positive_number(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "builtin:office", "--agent", "x", "--step-timeout", value])
    out, err = capsys.readouterr()
    assert (exit_info.value.code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("ember: argument --step-timeout: the step timeout must be")


def test_agent_policy_drives_run_episode_and_reaps_a_lingering_agent(tmp_path):
    """The Python API: AgentPolicy is a policy callable; an agent ignoring the end is terminated."""
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            return answer(observation)
    """,
    )
    lingering = agent + " --linger"
    (tmp_path / "agent.py").write_text(
        (tmp_path / "agent.py").read_text() + "\nif '--linger' in sys.argv:\n    time.sleep(60)\n"
    )
    scenario = ember.load_scenario("builtin:small-room")
    out = tmp_path / "api.record"
    with AgentPolicy(lingering, scenario, step_timeout=5) as policy:
        final_state = ember.run_episode(scenario, policy, 0, str(out))
        policy.finish(final_state, grace=0.2)
        assert policy.returncode == -signal.SIGTERM  # it ignored the end: terminated, and reaped
    ember.episode_metrics(scenario, str(out))


def test_agent_policy_error_is_an_ember_error(tmp_path):
    agent = write_agent(
        tmp_path,
        """
        def respond(step, observation):
            return "42"
    """,
    )
    scenario = ember.load_scenario("builtin:small-room")
    with AgentPolicy(agent, scenario, step_timeout=5) as policy:
        with pytest.raises(AgentError, match=r"^step 1: the agent sent a number, not a JSON object"):
            policy(ember.Simulator(scenario, 0).observe())
    assert isinstance(AgentError("x"), (ember.EmberError, ValueError))
