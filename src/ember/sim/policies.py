"""Built-in policies (simulator.md §4): ``stay``, ``random`` and ``greedy``.

A policy is a callable ``observation -> {person_id: action}``.  Built-ins
are made per episode by ``make_policy(name, scenario, seed)``.
"""

import random

from ..grid import UNREACHABLE, ExitDistances
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

    The distance field depends only on the burning set, which only grows.
    It is kept by an ``ExitDistances`` field: when the observation's
    burning list is longer than the last one, the cells not seen burning
    before are deleted from the field, which updates only the cells whose
    distance changes.  Should a cell ever leave the burning list, the field
    is rebuilt from scratch.
    """

    def __init__(self, scenario):
        sc = compile_scenario(scenario)
        self.grid = sc.grid
        self.exit_cells = sc.exit_cells
        self._burning_count = None
        self._seen = None  # bytearray: 1 for the cells seen burning so far
        self._field = None

    def _distances(self, burning):
        count = len(burning)
        if count != self._burning_count:
            cols = self.grid.cols
            if self._field is not None:
                seen = self._seen
                new = []
                for r, c in burning:
                    cell = r * cols + c
                    if not seen[cell]:
                        seen[cell] = 1
                        new.append(cell)
                if self._burning_count + len(new) == count:
                    self._field.burn(new)
                    self._burning_count = count
                    return self._field.dist
            # First observation, or cells left the burning list: start afresh.
            cells = [r * cols + c for r, c in burning]
            self._seen = bytearray(self.grid.size)
            for cell in cells:
                self._seen[cell] = 1
            self._field = ExitDistances(self.grid, self.exit_cells, cells)
            self._burning_count = count
        return self._field.dist

    def __call__(self, observation):
        dist = self._distances(observation["burning"])
        cols, size = self.grid.cols, self.grid.size
        actions = {}
        for person in observation["people"]:
            r, c = person["position"]
            i = r * cols + c
            own = dist[i]
            action = "stay"
            if own != UNREACHABLE:
                want = own - 1
                col = i % cols
                if i >= cols and dist[i - cols] == want:
                    action = "north"
                elif i + cols < size and dist[i + cols] == want:
                    action = "south"
                elif col and dist[i - 1] == want:
                    action = "west"
                elif col + 1 < cols and dist[i + 1] == want:
                    action = "east"
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
