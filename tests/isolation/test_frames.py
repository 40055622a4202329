"""The host's observation frame: the burning list as the cells added since the last observation."""

import random

from ember.frozen import burning_insertions, merge_added
from ember.scenario import load_scenario
from ember.sim.policies import GreedyPolicy
from ember.sim.simulator import Simulator


def test_the_additions_of_a_shared_lists_simulator_merge_back_to_its_burning_list_at_every_step():
    scenario = load_scenario("builtin:ember-v1/small-office-block")
    simulator = Simulator(scenario, 4, shared_lists=True)
    policy = GreedyPolicy(scenario, shared_observations=True)
    previous, host, sent_whole = None, None, 0
    while not simulator.terminated:
        observation = simulator.observe()
        burning = observation["burning"]
        added = None if previous is None else burning_insertions(previous, burning)
        if added is None:
            host, sent_whole = [list(cell) for cell in burning], sent_whole + 1
        else:
            host = merge_added(host, added)
        assert host == burning
        previous = burning
        simulator.step(policy(observation))
    assert sent_whole == 1  # the first observation only


def test_lists_that_do_not_only_grow_or_are_fresh_copies_are_sent_whole():
    cells = [[r, c] for r in range(5) for c in range(5)]
    assert burning_insertions(cells, [list(cell) for cell in cells[:-1]]) is None  # a cell left
    assert burning_insertions(cells, [list(cell) for cell in cells] + [[9, 9]]) is None  # fresh lists
    shuffled = cells[:]
    random.Random(3).shuffle(shuffled)
    assert burning_insertions(cells, shuffled) is None
    assert burning_insertions(cells, cells) == []


def test_insertions_anywhere_are_found_and_merged_back():
    rng = random.Random(11)
    for _ in range(200):
        everything = sorted({(rng.randrange(30), rng.randrange(30)) for _ in range(rng.randrange(1, 120))})
        items = [list(cell) for cell in everything]
        kept = [item for item in items if rng.random() < 0.7]
        added = burning_insertions(kept, items)
        assert added is not None
        assert [[row, col] for _, row, col in added] == [item for item in items if all(item is not k for k in kept)]
        assert merge_added([list(cell) for cell in kept], added) == items
