"""Built-in policies (simulator.md §4): ``stay``, ``random`` and ``greedy``.

A policy is a callable ``observation -> {person_id: action}``.  Built-ins
are made per episode by ``make_policy(name, scenario, seed)``.
"""

import random

from ..grid import UNREACHABLE
from ..scenario import compile_scenario

POLICY_NAMES = ("stay", "random", "greedy")
_RANDOM_ACTIONS = ("stay", "north", "south", "west", "east")


def stay_policy(observation):
    return {p["person_id"]: "stay" for p in observation["people"]}


class RandomPolicy:
    """Uniform actions from the policy's own RNG, seeded apart from the fire's."""

    def __init__(self, seed):
        self.rng = random.Random(f"ember/policy/random|{seed}")

    def __call__(self, observation):
        choice = self.rng.choice
        return {p["person_id"]: choice(_RANDOM_ACTIONS) for p in observation["people"]}


class GreedyPolicy:
    """Step toward the nearest usable exit through non-burning cells.

    The distance field depends only on the burning set, which only grows,
    so it is recomputed only when the observation's burning list is longer.
    """

    def __init__(self, scenario):
        sc = compile_scenario(scenario)
        self.grid = sc.grid
        self.exit_cells = sc.exit_cells
        self._burning_count = None
        self._dist = None

    def _distances(self, burning):
        if len(burning) != self._burning_count:
            grid = self.grid
            passable = bytearray(grid.open)
            for r, c in burning:
                passable[r * grid.cols + c] = 0
            self._dist = grid.distances(self.exit_cells, passable)
            self._burning_count = len(burning)
        return self._dist

    def __call__(self, observation):
        dist = self._distances(observation["burning"])
        grid = self.grid
        actions = {}
        for person in observation["people"]:
            r, c = person["position"]
            own = dist[r * grid.cols + c]
            action = "stay"
            if own != UNREACHABLE:
                for direction, n in grid.neighbours(r * grid.cols + c):
                    if dist[n] == own - 1:
                        action = direction
                        break
            actions[person["person_id"]] = action
        return actions


def make_policy(name, scenario, seed):
    if name == "stay":
        return stay_policy
    if name == "random":
        return RandomPolicy(seed)
    if name == "greedy":
        return GreedyPolicy(scenario)
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICY_NAMES)}.")
