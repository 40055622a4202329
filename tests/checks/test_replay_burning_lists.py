"""The replay without a kept burning list (``Simulator(burning_lists=False)``, as ``ember metrics`` runs it).

The metrics' replay check compares a step's burning list by its canonical
text only, so its simulator keeps no sorted list of ``[row, col]`` lists:
the steps it takes hold None there, until a step does not match; from then
on the list is kept again.  A strict step after replayed ones gets its
predecessor's list from the engine's burning mask.  Everything must be as
with the list kept: the steps (but for that None), the lists once asked for,
the metrics, and every error of a record that leaves the fast path at any
step.
"""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import Simulator
from ember.canonical import canonical_json
from ember.engine.core import EpisodeEngine
from ember.errors import MetricsInputError
from ember.sim.policies import make_policy

from helpers.floors import scenarios
from helpers.records import record_bytes


def without_burning(step):
    return dict(step, snapshot=dict(step["snapshot"], burning=None))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 2**64 - 1), st.integers(0, 40))
def test_the_steps_are_the_kept_lists_steps_until_asked_and_then_equal(scenario, seed, asked_at):
    kept = Simulator(scenario, seed, shared_lists=True)
    lazy = Simulator(scenario, seed, shared_lists=True, burning_lists=False)
    policy = make_policy("random", kept.scenario, seed)
    assert canonical_json(lazy.initial_state) == canonical_json(kept.initial_state)
    if asked_at == 0:
        assert lazy.burning_list() == kept.initial_state["burning"]
    while not kept.terminated:
        actions = policy(kept.observe())
        want, got = kept.step(actions), lazy.step(actions)
        assert lazy.burning_json() == canonical_json(want["snapshot"]["burning"])
        if kept.t < asked_at:
            assert canonical_json(got) == canonical_json(without_burning(want))
            continue
        if kept.t == asked_at:
            assert got["snapshot"]["burning"] is None
            got["snapshot"]["burning"] = lazy.burning_list()  # made from the mask, kept from here on
        assert canonical_json(got) == canonical_json(want)
    assert canonical_json(lazy.final_state) == canonical_json(kept.final_state)


def strict_outcome(monkeypatch, scenario, data):
    """The result of the strict reader alone: metrics dict or the error's message."""
    with monkeypatch.context() as patch:
        patch.setattr(EpisodeEngine, "take_line", lambda self, index, line: False)
        return outcome(scenario, data)


def outcome(scenario, data):
    try:
        return ember.episode_metrics(scenario, data).to_dict()
    except MetricsInputError as exc:
        return str(exc)


def with_step_line(data, k, new_line):
    lines = data.split(b"\n")
    comma = lines[3 + k].endswith(b",")
    lines[3 + k] = new_line + (b"," if comma else b"")
    return b"\n".join(lines)


def step_value(data, k):
    return json.loads(data)["steps"][k]


SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(scenarios(), st.integers(0, 2**64 - 1), st.data())
def test_a_record_leaving_the_fast_path_at_any_step_gets_the_strict_readers_outcome(monkeypatch, scenario, seed, data):
    policy = make_policy("random", ember.Simulator(scenario, seed).scenario, seed)
    record = record_bytes(scenario, policy, seed)
    steps = record.count(b"\n") - 5
    k = data.draw(st.integers(0, steps - 1))
    value = step_value(record, k)
    burning = value["snapshot"]["burning"]
    variants = [
        json.dumps(value).encode(),  # the same value, not canonical: the strict path from step k on
        canonical_json(dict(value, snapshot=dict(value["snapshot"], burning=burning + [[0, 0]]))),
        canonical_json(dict(value, snapshot=dict(value["snapshot"], burning=burning[1:]))),
    ]
    for line in variants:
        mutant = with_step_line(record, k, line)
        assert outcome(scenario, mutant) == strict_outcome(monkeypatch, scenario, mutant)
