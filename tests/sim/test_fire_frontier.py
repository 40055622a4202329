"""The fire's frontier, kept as cells ignite, against a recomputation after every step.

``FireSpread.frontier`` maps each open, unburnt cell next to the fire to
its draw texts (simulator.md §3 rule 4, the part after the step): one per
burning neighbour, naming the direction from the cell to that neighbour.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember import Simulator, load_scenario
from ember.sim.policies import make_policy

from helpers.floors import scenarios

DIRECTIONS = (("north", -1, 0), ("south", 1, 0), ("west", 0, -1), ("east", 0, 1))


def recomputed_frontier(sim):
    grid, burning = sim.grid, sim.burning
    frontier = {}
    for cell in range(grid.size):
        if not grid.open[cell] or burning[cell]:
            continue
        row, col = divmod(cell, grid.cols)
        tails = [
            f"{row}|{col}|{name}".encode()
            for name, dr, dc in DIRECTIONS
            if 0 <= row + dr < grid.rows and 0 <= col + dc < grid.cols and burning[(row + dr) * grid.cols + col + dc]
        ]
        if tails:
            frontier[cell] = sorted(tails)
    return frontier


def check_episode(sim, policy):
    assert {c: sorted(t) for c, t in sim.fire.frontier.items()} == recomputed_frontier(sim)
    while not sim.terminated:
        sim.step(policy(sim.observe()))
        assert {c: sorted(t) for c, t in sim.fire.frontier.items()} == recomputed_frontier(sim)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 2**64 - 1))
def test_the_frontier_is_the_recomputed_one_after_every_step(scenario, seed):
    sim = Simulator(scenario, seed)
    check_episode(sim, make_policy("random", sim.scenario, seed))


def test_the_frontier_of_a_spreading_hall_is_the_recomputed_one():
    scenario = load_scenario("builtin:ember-v1/small-hall-casualty")
    scenario["termination"]["max_steps"] = 40
    sim = Simulator(scenario, 3)
    check_episode(sim, make_policy("greedy", sim.scenario, 3))
