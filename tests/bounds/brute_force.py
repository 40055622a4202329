"""An independent brute force for bounds.md: every joint action sequence, run through the real simulator.

States reached after each step are kept once each (the fire is the same in
every one of them, so a state is the people's statuses and positions); the
children of a state are the simulator steps of every joint action from a
copy of its simulator.  evacuated_max / casualties_min are the best final
counts over every terminated state.
"""

import itertools
import pickle

from ember.grid.cells import DELTAS
from ember.sim.simulator import ACTIONS, Simulator


def useful_actions(sim, i):
    """Person i's actions, less those whose target is off the grid or a wall (or burning, under ``block``):
    rule 1 makes them no candidate, exactly as ``stay``, so they reach the same states."""
    grid, cell = sim.grid, sim.position[i]
    row, col = divmod(cell, grid.cols)
    useful = ["stay"]
    for action in ACTIONS[1:]:
        dr, dc = DELTAS[action]
        if not grid.in_bounds(row + dr, col + dc):
            continue
        target = cell + dr * grid.cols + dc
        if grid.open[target] and not (sim.scenario.enter_fire == "block" and sim.burning[target]):
            useful.append(action)
    return useful


def brute_force(scenario, seed):
    """(evacuated_max, casualties_min) over every joint action sequence."""
    start = Simulator(scenario, seed, shared_lists=True)
    frontier = [start]
    finals = []
    while frontier:
        seen = {}
        for sim in frontier:
            active = list(sim.active_ids)
            choices = [useful_actions(sim, i) for i in sim.active]
            frozen = pickle.dumps(sim)  # a copy per joint action: pickle's C code is far faster than deepcopy
            for joint in itertools.product(*choices):
                child = pickle.loads(frozen)
                child.step(dict(zip(active, joint)))
                key = (tuple(child.status), tuple(child.position))
                if key in seen:
                    continue
                seen[key] = child
        frontier = []
        for child in seen.values():
            (finals if child.terminated else frontier).append(child)
    evacuated = max(sim.status.count("evacuated") for sim in finals)
    casualties = min(sim.status.count("casualty") for sim in finals)
    return evacuated, casualties
