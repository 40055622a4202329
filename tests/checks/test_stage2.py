"""Stage-2 checks (ember.checks.stage2): regressions."""

import json

import pytest

import ember
from ember.canonical import canonical_json

from helpers.hostile_input import run
from helpers.scenarios import make_scenario
from helpers.strict import no_hang


def test_regression_coverage_was_quadratic_in_extra_actions():
    # Coverage rebuilt set(active) for every action it looked at: 200,000
    # extra actions in a step of 4,000 people took 20 s (and a million of
    # 10,000 people, hours); now about a second.
    people = {f"p{i:05d}": (i // 50, i % 50) for i in range(4000)}
    crowd = make_scenario(81, 50, people=people, exits={"x": (80, 49)}, max_steps=2)
    record = run(crowd, "stay", 0).split(b"\n")
    step = json.loads(record[3].rstrip(b","))
    step["actions"].update((f"q{k:07d}", "stay") for k in range(200_000))
    data = b"\n".join(record[:3]) + b"\n" + canonical_json(step) + b"\n"
    with (
        no_hang(),
        pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]\.actions\.q0000000: expected actions only"),
    ):
        ember.episode_metrics(crowd, data)
