"""The python-policy host (ember.isolation.host) in the sandbox: the agent protocol, its failures, its imports."""

import gzip
import json
import sys

import pytest

from ember.agent import AgentPolicy
from ember.engine.run import measure_run
from ember.errors import AgentError
from ember.isolation.boundary import host_command
from ember.isolation.sandbox import SandboxLimits
from ember.scenario import compile_scenario, load_scenario

from helpers.sandboxes import open_folder, sandbox_for, write_file

#: Everything of EMBER the host may have loaded before the policy's module: itself, Base and Agent.
ALLOWED = {
    "ember",
    "ember.isolation",
    "ember.isolation.host",
    "ember.agent",
    "ember.errors",
    "ember.canonical",
    "ember.frozen",
}
FORBIDDEN = ("ember.sim", "ember.record", "ember.checks", "ember.metrics", "ember.engine", "ember.results")


@pytest.fixture
def folder():
    with open_folder() as path:
        yield path


def hosted(folder, source, module_file, scenario, limits=None, step_timeout=20, stderr=None):
    """An AgentPolicy running ``source`` (MODULE:NAME) through the host, in the sandbox."""
    box = sandbox_for(module_file, folder, limits=limits)
    return AgentPolicy(
        host_command(source),
        scenario.data,
        step_timeout,
        launch=box.start,
        stderr=stderr,
        who="python policy",
        host_source=source,
    )


def episode(agent, scenario, seed, out=None):
    with agent:
        measured = measure_run(scenario, agent, seed, out=out, live=False)
        agent.finish(measured.final_state)
    return measured


def test_greedy_through_the_host_writes_the_builtin_greedys_record_byte_for_byte(folder, tmp_path):
    module = write_file(
        folder,
        "wrapped_greedy.py",
        """
        from ember.sim.policies import GreedyPolicy

        def make(scenario):
            print("made", flush=True)  # to the log: never an answer
            return GreedyPolicy(scenario)
        """,
    )
    scenario = compile_scenario(load_scenario("builtin:office"))
    log = tmp_path / "host.stderr"
    for seed in (0, 3):
        hosted_record, builtin_record = tmp_path / f"h{seed}.record.gz", tmp_path / f"b{seed}.record.gz"
        with log.open("wb") as stderr:
            agent = hosted(folder, "wrapped_greedy:make", module, scenario, stderr=stderr)
            measured = episode(agent, scenario, seed, str(hosted_record))
        builtin = measure_run(scenario, "greedy", seed, out=str(builtin_record), live=False)
        assert gzip.decompress(hosted_record.read_bytes()) == gzip.decompress(builtin_record.read_bytes())
        assert measured.metrics.to_dict() == builtin.metrics.to_dict()
        assert log.read_bytes() == b"made\n"


def test_the_host_loads_no_part_of_ember_but_base_and_agent_before_the_policy(folder):
    module = write_file(
        folder,
        "spy.py",
        """
        import json, sys
        LOADED = sorted(name for name in sys.modules if name == "ember" or name.startswith("ember."))

        def make(scenario):
            raise RuntimeError(json.dumps(LOADED))  # what the host had loaded, into the row's reason
        """,
    )
    scenario = compile_scenario(load_scenario("builtin:office"))
    with pytest.raises(AgentError) as caught:
        episode(hosted(folder, "spy:make", module, scenario), scenario, 0)
    message = str(caught.value)
    assert message.startswith("the python policy spy:make could not be made: RuntimeError: ")
    loaded = set(json.loads(message.split("RuntimeError: ", 1)[1]))
    assert {"ember", "ember.isolation", "ember.isolation.host"} <= loaded  # imported by python -c
    assert loaded <= ALLOWED
    assert not [name for name in loaded if name.startswith(FORBIDDEN)]


def test_a_python_policy_playing_greedy_loads_neither_orjson_nor_traceback(folder):
    # Each costs milliseconds of every episode's fresh interpreter: the host and the policy's scenario need
    # none (the host loads traceback for a failure only, after this one's words are made; python -c, not
    # -m, never loads runpy; the scenario loads hashlib only to hash).
    module = write_file(
        folder,
        "lean.py",
        """
        import json, sys
        from ember.sim.policies import GreedyPolicy

        def make(scenario):
            policy = GreedyPolicy(scenario)

            def play(observation):
                policy(observation)
                heavy = ("orjson", "traceback", "hashlib", "runpy")
                raise RuntimeError(json.dumps([name for name in heavy if name in sys.modules]))

            return play
        """,
    )
    scenario = compile_scenario(load_scenario("builtin:office"))
    with pytest.raises(AgentError) as caught:
        episode(hosted(folder, "lean:make", module, scenario), scenario, 0)
    assert str(caught.value) == "step 1: the python policy raised RuntimeError: []"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "def make(scenario):\n    raise ValueError('no weights')\n",
            "the python policy failing:make could not be made: ValueError: no weights",
        ),
        (
            "def make(scenario):\n    def policy(observation):\n        raise KeyError('p9')\n    return policy\n",
            "step 1: the python policy raised KeyError: 'p9'",
        ),
        (
            "def make(scenario):\n"
            "    return lambda observation: {p['person_id']: object() for p in observation['people']}\n",
            "step 1: the python policy returned an answer that is not JSON: TypeError: "
            "Object of type object is not JSON serializable",
        ),
        (
            "def make(scenario):\n"
            "    return lambda observation: {p['person_id']: 'up' for p in observation['people']}\n",
            "step 1: the python policy returned illegal actions: ",
        ),
        (
            "import os\ndef make(scenario):\n    return lambda observation: os._exit(3)\n",
            "step 1: the python policy exited with status 3 before answering the observation.",
        ),
    ],
)
def test_a_failing_python_policy_is_one_line_naming_what_it_did(folder, body, message):
    module = write_file(folder, "failing.py", body)
    scenario = compile_scenario(load_scenario("builtin:office"))
    agent = hosted(folder, "failing:make", module, scenario)
    with pytest.raises(AgentError) as caught:
        try:
            episode(agent, scenario, 0)
        except Exception as exc:
            if type(exc).__name__ == "ActionError":
                raise agent.refused(exc) from exc
            raise
    assert str(caught.value).startswith(message)


def test_a_policy_over_its_memory_limit_is_the_memory_row(folder):
    module = write_file(
        folder,
        "hungry.py",
        """
        def make(scenario):
            def policy(observation):
                policy.hoard = b"x" * (256 << 20)
                return {p["person_id"]: "stay" for p in observation["people"]}
            return policy
        """,
    )
    scenario = compile_scenario(load_scenario("builtin:office"))
    with pytest.raises(AgentError) as caught:
        episode(hosted(folder, "hungry:make", module, scenario, limits=SandboxLimits(memory_mb=96)), scenario, 0)
    assert str(caught.value) == "the policy exceeded its memory limit of 96 MiB"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("def make(scenario):\n    pass\n", None),
        ("raise ImportError('no weights file')\n", "module 'checked' does not import: ImportError: no weights file"),
        ("x = 1\n", "module 'checked' has no attribute 'make'."),
        ("make = 42\n", "checked.make is not callable (a int)."),
        (
            "import os\nos._exit(4)\n",
            "module 'checked' does not import: the process importing it exited with status 4 before it was imported.",
        ),
        ("import time\ntime.sleep(60)\n", "module 'checked' did not finish importing within 1 s."),
    ],
)
def test_a_python_source_is_checked_by_the_host_in_the_sandbox(folder, body, reason):
    from ember.isolation.boundary import Launcher, check_python_source

    module = write_file(folder, "checked.py", body)
    launcher = Launcher("required", files=[module], cwd=folder)
    assert check_python_source("checked:make", launcher, 1.0 if "sleep" in body else 30.0) == reason


class _Recording:
    """A python policy (in this process) that keeps what the host handed it and answers as greedy does."""

    def __init__(self, scenario):
        from ember.sim.policies import GreedyPolicy

        self.greedy = GreedyPolicy(scenario)
        self.seen = []

    def __call__(self, observation):
        burning = observation["burning"]
        refused = []  # each change tried: True when refused
        changes = [lambda: burning.append([0, 0])] + ([lambda: burning[0].append(1)] if burning else [])
        for change in changes:
            try:
                change()
                refused.append(False)
            except TypeError:
                refused.append(True)
        self.seen.append((json.dumps(observation, sort_keys=True), type(burning), burning.source, refused))
        return self.greedy(observation)


def test_the_host_hands_the_policy_the_whole_burning_list_read_only_merged_from_its_additions(monkeypatch):
    # The frames EMBER's side sends (ember.agent.burning_insertions on the simulator's own lists), played
    # into the host in this process: each observation the policy gets is the simulator's, list for list.
    import io
    import types

    from ember.frozen import BurningCells, burning_insertions
    from ember.isolation.host import PolicyHost
    from ember.sim.policies import GreedyPolicy
    from ember.sim.simulator import Simulator

    recorders = []

    def make(scenario):
        recorders.append(_Recording(scenario))
        return recorders[-1]

    monkeypatch.setitem(sys.modules, "recording_policy", types.SimpleNamespace(make=make))
    scenario = load_scenario("builtin:ember-v1/large-hall-casualty")
    simulator, greedy = Simulator(scenario, 2), GreedyPolicy(scenario)
    frames, expected, previous, whole = [json.dumps({"type": "scenario", "scenario": scenario})], [], None, []
    for _ in range(60):
        observation = simulator.observe()
        expected.append(json.dumps(observation, sort_keys=True))
        added = (
            None
            if previous is None or len(expected) % 25 == 0
            else burning_insertions(previous, observation["burning"])
        )
        previous = observation["burning"]
        if added is None:  # the first, and every 25th as a whole list (as when EMBER cannot say what was added)
            whole.append(len(expected) - 1)
            frames.append(json.dumps({"type": "observation", "observation": observation}))
        else:
            rest = {k: v for k, v in observation.items() if k != "burning"}
            frames.append(json.dumps({"type": "observation", "observation": rest, "burning_added": added}))
        if simulator.step(greedy(observation)).get("terminated"):
            break
    answers = io.BytesIO()
    PolicyHost("recording_policy:make", answers, io.BytesIO("\n".join(frames).encode() + b"\n")).serve()
    seen = recorders[0].seen
    assert [text for text, *_ in seen] == expected
    assert len(expected) > 50 and len(json.loads(expected[-1])["burning"]) > 100  # the fire did spread
    assert all(kind is BurningCells and refused and all(refused) for _, kind, _, refused in seen)
    # Lists grown by insertions share one lineage; a whole list starts a new one.
    lineages = [source for _, _, source, _ in seen]
    for index in range(1, len(seen)):
        assert (lineages[index] is lineages[index - 1]) == (index not in whole)
    reference = GreedyPolicy(scenario)  # the same policy fed the simulator's observations gives the same answers
    assert [json.loads(line) for line in answers.getvalue().splitlines()] == [
        json.loads(json.dumps(reference(json.loads(text)))) for text in expected
    ]
