"""bounds.md §4: witness records are genuine run records that reach the bounds, checked by the engine."""

import io
import json

import pytest

from ember.bounds.witness import CASUALTIES_FILE, EVACUATED_FILE, witness_records
from ember.engine.read import episode_metrics
from ember.errors import BoundsError
from ember.record.writer import run_episode

from .episodes import random_episodes
from helpers.scenarios import make_scenario

EPISODES = random_episodes(72, seed=20261202) + random_episodes(24, seed=7, max_people=5)


def replayed_bytes(scenario, seed, record_bytes):
    """The canonical bytes of the record's actions run again through the writer."""
    steps = iter(json.loads(record_bytes)["steps"])
    out = io.BytesIO()
    run_episode(scenario, lambda observation: next(steps)["actions"], seed, out)
    return out.getvalue()


@pytest.mark.parametrize("scenario, seed", EPISODES)
def test_witnesses_replay_and_measure_exactly_the_bounds(tmp_path, scenario, seed):
    found = witness_records(scenario, seed, tmp_path)
    evacuated = episode_metrics(scenario, str(tmp_path / EVACUATED_FILE))["safety"]
    surviving = episode_metrics(scenario, str(tmp_path / CASUALTIES_FILE))["safety"]
    assert evacuated["evacuated"] == found.evacuated_max
    assert surviving["casualties"] == found.casualties_min
    for name in (EVACUATED_FILE, CASUALTIES_FILE):
        data = (tmp_path / name).read_bytes()
        assert replayed_bytes(scenario, seed, data) == data  # canonical record bytes


def test_a_queue_in_a_corridor_leaves_one_a_step(tmp_path):
    # Everyone reaches the west exit only by moving into a cell the one ahead leaves in the same step (a chain)
    # or by taking over the path of someone behind.
    scenario = make_scenario(
        1, 6, people={"a": (0, 1), "b": (0, 2), "c": (0, 4)}, exits={"x": (0, 0)}, max_steps=6, scenario_id="corridor"
    )
    found = witness_records(scenario, 0, tmp_path)
    assert found.evacuated_max == 3
    assert episode_metrics(scenario, str(tmp_path / EVACUATED_FILE))["safety"]["evacuated"] == 3


def test_no_witness_when_the_bounds_are_null(tmp_path):
    # 1024 x 1024 open cells for 200 steps: W = 2^20 x 200 > 2^27, the fire still spreading at L = 128.
    scenario = make_scenario(
        1024, 1024, people={"a": (1000, 1000)}, exits={"x": (0, 1023)}, ignitions=[(0, 0)], p="1/2", max_steps=200
    )
    target = tmp_path / "witness"
    expected = r"^no witness: \|open\| x H = 1048576 x 200 = 209715200 exceeds 2\^27 \(a record may run to H steps\)$"
    with pytest.raises(BoundsError, match=expected):
        witness_records(scenario, 0, target)
    assert not target.exists()


def test_no_witness_when_a_record_of_h_steps_is_over_the_limit(tmp_path):
    # The bounds exist (the fire is out at once, the shortcut needs no more steps) but H steps would exceed 2^27.
    scenario = make_scenario(5, 5, people={"a": (2, 2)}, exits={"x": (0, 0)}, max_steps=2**31 - 1)
    expected = r"^no witness: \|open\| x H = 25 x 2147483647 = 53687091175 exceeds 2\^27 "
    with pytest.raises(BoundsError, match=expected):
        witness_records(scenario, 0, tmp_path / "w")
    assert not (tmp_path / "w").exists()
