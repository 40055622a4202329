"""The one episode loop (sim/loop.py): policy → simulator → each step to the sinks.

A sink that keeps every call shows what every user of the loop (the record
writer, the engine's measuring sink, the environments) is given: ``start``
once with the simulator's header and s_0, then ``step`` per step with the
final state exactly at the last one.  The stepping form (``EpisodeStepper``)
driven from outside gives the same calls as the driven form
(``run_policy``).
"""

import ast
import copy
import io
import json
import pathlib
import re

import pytest

import ember
from ember.canonical import canonical_json
from ember.errors import ActionError
from ember.sim.loop import EpisodeStepper, resolve_policy, run_policy
from ember.sim.policies import RandomPolicy, make_policy
from ember.sim.simulator import Simulator

from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json

BURNING = picture_scenario(["#####0##", "#a.b..*#", "#c....d1"], p="1/2", enter_fire="casualty", max_steps=30)


class Calls:
    """A sink that keeps deep copies of everything it is given."""

    def __init__(self):
        self.calls = []

    def start(self, header, initial_state):
        self.calls.append(("start", copy.deepcopy(header), copy.deepcopy(initial_state)))

    def on_step(self, step, final_state):
        self.calls.append(("step", copy.deepcopy(step), copy.deepcopy(final_state)))


def record_parts(scenario, policy, seed):
    out = io.BytesIO()
    ember.run_episode(scenario, policy, seed, out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize(("scenario", "policy", "seed"), [("builtin:office", "greedy", 4), (BURNING, "random", 9)])
def test_run_policy_gives_every_sink_the_record_in_order(scenario, policy, seed):
    first, second = Calls(), Calls()
    simulator = Simulator(scenario, seed)
    final_state = run_policy(simulator, policy, (first, second))
    assert first.calls == second.calls
    record = record_parts(scenario, policy, seed)
    kind, header, initial_state = first.calls[0]
    assert kind == "start"
    assert_same_json(header, record["header"])
    assert_same_json(initial_state, record["initial_state"])
    steps = first.calls[1:]
    assert [kind for kind, _, _ in steps] == ["step"] * len(record["steps"])
    for (_, step, final), expected in zip(steps, record["steps"]):
        assert_same_json(step, expected)
        assert final is None or step is steps[-1][1]
    assert steps[-1][2] is not None
    assert_same_json(steps[-1][2], record["final_state"])
    assert canonical_json(final_state) == canonical_json(record["final_state"])
    assert simulator.terminated


def test_the_stepping_form_driven_from_outside_gives_the_same_calls():
    driven, stepped = Calls(), Calls()
    run_policy(Simulator(BURNING, 5), RandomPolicy(2), (driven,))
    episode = EpisodeStepper(Simulator(BURNING, 5), (stepped,))
    policy = RandomPolicy(2)
    steps = 0
    while not episode.terminated:
        assert episode.final_state is None
        returned = episode.step(policy(episode.observe()))
        assert returned == stepped.calls[-1][1]
        steps += 1
    assert stepped.calls == driven.calls
    assert len(stepped.calls) == steps + 1
    assert episode.final_state == driven.calls[-1][2]


def test_an_illegal_action_reaches_no_sink_and_the_episode_goes_on():
    calls = Calls()
    episode = EpisodeStepper(Simulator(BURNING, 1), (calls,))
    assert len(calls.calls) == 1
    with pytest.raises(ActionError, match="unknown action 'up'"):
        episode.step({"a": "up", "b": "stay", "c": "stay", "d": "stay"})
    with pytest.raises(ActionError):
        episode.step({})
    assert len(calls.calls) == 1  # the refused steps were never handed on
    episode.step(dict.fromkeys(("a", "b", "c", "d"), "stay"))
    assert [kind for kind, *_ in calls.calls] == ["start", "step"] and calls.calls[1][1]["step"] == 1


def test_an_unknown_policy_name_starts_no_sink():
    calls = Calls()
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        run_policy(Simulator(BURNING, 0), "nope", (calls,))
    assert calls.calls == []


def test_a_policy_name_is_made_for_the_simulators_scenario_and_seed():
    simulator = Simulator(BURNING, 77)
    made = resolve_policy("random", simulator)
    expected = make_policy("random", simulator.scenario, 77)
    observation = simulator.observe()
    assert [made(observation) for _ in range(5)] == [expected(observation) for _ in range(5)]
    assert resolve_policy(expected, simulator) is expected


def test_no_sink_runs_the_episode_alone():
    simulator = Simulator("builtin:office", 2)
    final_state = run_policy(simulator, "greedy")
    assert_same_json(final_state, record_parts("builtin:office", "greedy", 2)["final_state"])


def base_parts():
    """The Base layer's modules, as the import contract's last layer names them (pyproject.toml)."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    layers = re.search(r"^layers = \[(.*?)^\]", text, re.S | re.M).group(1)
    last = re.findall(r'^\s*"([^"]+)",', layers, re.M)[-1]
    return set(re.split(r"\s*[:|]\s*", last.strip()))


BASE = base_parts()


def imported_parts(path):
    """The first component under ``ember`` of every module ``path`` imports (relative or absolute)."""
    tree = ast.parse(path.read_text())
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y: inside sim/
                parts.add("sim")
            elif node.level == 2:  # from ..x import y
                parts.add((node.module or "").split(".")[0])
            elif (node.module or "").startswith("ember."):
                parts.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            parts.update(a.name.split(".")[1] for a in node.names if a.name.startswith("ember."))
    return parts


def test_sim_imports_only_the_base_and_itself():
    """architecture.md: the loop knows sinks, not what they do: Sim imports neither Record, Checks nor the engine."""
    folder = pathlib.Path(ember.__file__).parent / "sim"
    for path in sorted(folder.glob("*.py")):
        assert imported_parts(path) <= BASE | {"sim"}, path.name
