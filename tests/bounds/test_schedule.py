"""bounds.md §1 and §3: the fire schedule against the simulator's own fire, the shortcut, the limit."""

import random

import pytest

from ember.bounds import EpisodeBounds, episode_bounds, fire_stable_step
from ember.bounds.network import Floor, Network
from ember.bounds.schedule import NEVER, FireSchedule
from ember.scenario import compile_scenario
from ember.sim.simulator import Simulator

from .episodes import random_episodes
from helpers.scenarios import make_scenario


def sealed_scenario(rng, index):
    """A floor with fire and exits, and one person in a walled-off cell east of it (never burns, never
    leaves), so that the simulator runs all H steps however the fire goes."""
    rows, cols = rng.randint(2, 9), rng.randint(2, 9)
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    rng.shuffle(cells)
    walls = [(r, cols) for r in range(rows)] + [(r, cols + 1) for r in range(1, rows)]
    ignitions, more_walls = [], []
    for cell in cells[1:]:
        u = rng.random()
        if u < 0.15:
            more_walls.append(cell)
        elif u < 0.25:
            ignitions.append(cell)
    return make_scenario(
        rows,
        cols + 2,
        people={"sealed": (0, cols + 1)},
        exits={"x": cells[0]},
        walls=walls + more_walls,
        ignitions=ignitions,
        p=rng.choice(["0/1", "1/2", "1/1", "1/5", "1/4294967296"]),
        max_steps=rng.randint(1, 40),
        scenario_id=f"sealed-{index}",
    )


def simulated_schedule(scenario, seed):
    """b(c) and fire_stable_step from the simulator's burning sets, by the words of bounds.md §1."""
    sim = Simulator(scenario, seed)
    grid = sim.grid
    horizon = sim.scenario.max_steps
    ignite = [NEVER] * grid.size
    burning = [set(sim.scenario.ignitions)]
    for cell in burning[0]:
        ignite[cell] = 0
    for t in range(1, horizon + 1):
        step = sim.step(dict.fromkeys(sim.active_ids, "stay"))
        for row, col in step["ignitions"]:
            ignite[row * grid.cols + col] = t
        burning.append(burning[-1] | {row * grid.cols + col for row, col in step["ignitions"]})
    assert sim.termination_reason == "max_steps"  # the sealed person saw every step
    if sim.scenario.spread_numerator == 0:
        return ignite, 0

    def spreading(fire):
        return any(
            grid.open[c] and c not in fire and any(n in fire for _, n in grid.neighbours(c)) for c in range(grid.size)
        )

    stable = next((t for t in range(horizon + 1) if not spreading(burning[t])), None)
    return ignite, stable


@pytest.mark.parametrize("index", range(60))
def test_the_schedule_is_the_simulators_fire(index):
    rng = random.Random(index)
    scenario, seed = sealed_scenario(rng, index), rng.randrange(2**64)
    ignite, stable = simulated_schedule(scenario, seed)
    schedule = FireSchedule(compile_scenario(scenario), seed)
    assert schedule.stable_step == stable
    assert fire_stable_step(compile_scenario(scenario), seed) == stable
    if stable is not None:
        assert schedule.ignite == ignite  # nothing ignites after fire_stable_step


def test_fire_stable_step_is_zero_without_spread_even_beside_fire():
    scenario = make_scenario(3, 3, people={"a": (2, 2)}, exits={"x": (0, 2)}, ignitions=[(0, 0)], p="0/7")
    assert episode_bounds(scenario, 0)["fire_stable_step"] == 0


LONG = [
    (dict(sc, termination={"max_steps": sc["termination"]["max_steps"] * 9}), seed)
    for sc, seed in random_episodes(40, seed=99, max_people=4)
]


@pytest.mark.parametrize("scenario, seed", LONG)
def test_the_shortcut_and_the_growing_horizons_give_the_flow_of_g_h(scenario, seed):
    compiled = compile_scenario(scenario)
    schedule = FireSchedule(compiled, seed)
    full, _ = Network(Floor(compiled, schedule.ignite), compiled.max_steps).solve()
    assert EpisodeBounds(compiled, seed).evacuated_max == full
    assert EpisodeBounds(compiled, seed, paths=True).evacuated_max == full


def test_null_bounds_over_the_limit():
    # 2^20 open cells: L = 128 steps, and the fire from a corner at p = 1/2 is still spreading then.
    scenario = make_scenario(
        1024, 1024, people={"a": (1000, 1000)}, exits={"x": (0, 1023)}, ignitions=[(0, 0)], p="1/2", max_steps=200
    )
    found = episode_bounds(scenario, 3)
    assert found["evacuated_max"] is None and found["casualties_min"] is None
    assert found["fire_stable_step"] is None
    assert found["limit"] == "W = 209715200 exceeds 2^27"


def test_a_long_horizon_needs_only_the_steps_to_fire_stable_step():
    # H - t_s >= n |A|: T_used = t_s, so H = 2^31 - 1 is no limit.
    scenario = make_scenario(5, 5, people={"a": (2, 2), "b": (4, 4)}, exits={"x": (0, 0)}, max_steps=2**31 - 1)
    found = episode_bounds(scenario, 0)
    assert (found["evacuated_max"], found["casualties_min"], found["fire_stable_step"]) == (2, 0, 0)
    assert found["limit"] is None
