"""bounds.md §2: the flow values equal an exhaustive search over every joint action, through the simulator."""

import pytest

from ember.bounds import EpisodeBounds, episode_bounds

from .brute_force import brute_force
from .episodes import MODES, PROBABILITIES, random_episodes

EPISODES = random_episodes(72, seed=20261202)
# Up to 5 people, over at most 4 steps (5^5 joint actions a state).
CROWDED = [(sc, s) for sc, s in random_episodes(12, seed=5, max_people=5) if sc["termination"]["max_steps"] <= 4]


def test_the_episodes_cover_both_modes_and_every_probability():
    seen = {(sc["fire"]["enter_fire"], sc["fire"]["spread_probability"]) for sc, _ in EPISODES}
    assert seen == {(mode, p) for mode in MODES for p in PROBABILITIES}


@pytest.mark.parametrize("scenario, seed", EPISODES + CROWDED)
def test_bounds_equal_the_brute_force(scenario, seed):
    found = episode_bounds(scenario, seed)
    assert (found["evacuated_max"], found["casualties_min"]) == brute_force(scenario, seed)
    assert found["limit"] is None


@pytest.mark.parametrize("scenario, seed", EPISODES[:24])
def test_the_flows_of_the_witness_reach_the_same_values(scenario, seed):
    found = EpisodeBounds(scenario, seed, paths=True)
    assert len(found.evacuated_paths) == found.evacuated_max
    assert len(found.survivor_paths) == found.population - found.casualties_min
    assert all(exit_index is not None for _, exit_index in found.evacuated_paths)
