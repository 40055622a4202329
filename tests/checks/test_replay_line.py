"""The replay's fast comparison of a step line: the simulator's kept burning-list bytes in place of encoding.

``Replayer.try_line`` takes a line only when it is the canonical encoding
of the simulator's own step.  It encodes the step with an empty burning
list and puts the simulator's kept bytes of that list (``BurningText``) in
its place; that must agree with the plain ``canonical_json(step) == line``
for the step's own line and for lines that differ anywhere, in the burning
list above all.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember import Simulator, load_scenario
from ember.canonical import canonical_json
from ember.checks.replay import Replayer
from ember.sim.policies import make_policy

from helpers.floors import scenarios


def episode_lines(scenario, seed):
    sim = Simulator(scenario, seed)
    policy = make_policy("random", sim.scenario, seed)
    steps = []
    while not sim.terminated:
        steps.append(sim.step(policy(sim.observe())))
    return sim.header, [canonical_json(step) for step in steps]


def perturbations(line):
    """Lines that differ from ``line`` in one place: a digit, a bracket, a cell, a space."""
    out = []
    at = line.find(b'"burning":[')
    if at >= 0:
        start = at + len(b'"burning":[')
        close = line.find(b"]]", start)
        if close > 0:
            out.append(line[:start] + b"[0,0]," + line[start:])  # a cell more
            out.append(line[:close] + b"]" + line[close + 2 :])  # a bracket less
        digit = next((i for i in range(start, len(line)) if line[i : i + 1].isdigit()), None)
        if digit is not None:
            other = b"9" if line[digit : digit + 1] != b"9" else b"8"
            out.append(line[:digit] + other + line[digit + 1 :])
    out.append(line.replace(b",", b", ", 1))
    out.append(line[:-1] + b" }")
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 2**64 - 1))
def test_the_fast_comparison_is_the_plain_one(scenario, seed):
    header, lines = episode_lines(scenario, seed)
    replayer = Replayer(scenario, header)
    for line in lines:
        taken = replayer.try_line(line)
        assert taken is not None and canonical_json(taken.step) == line
        # The replay's simulator stands where the step left it: other lines are compared with it.
        for other in perturbations(line):
            assert replayer._is_line(taken.step, other) is (canonical_json(taken.step) == other)


def test_the_kept_burning_bytes_are_the_encoded_list_after_every_step():
    scenario = load_scenario("builtin:ember-v1/medium-hall-casualty")
    scenario["termination"]["max_steps"] = 60
    sim = Simulator(scenario, 2, shared_lists=True)
    policy = make_policy("greedy", sim.scenario, 2)
    assert sim.burning_json() == canonical_json(sim.initial_state["burning"])
    while not sim.terminated:
        step = sim.step(policy(sim.observe()))
        assert sim.burning_json() == canonical_json(step["snapshot"]["burning"])
