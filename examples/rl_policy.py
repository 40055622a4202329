"""A tiny linear evacuation policy: the policy half of the RL example (docs/envs.md).

``examples/rl_train.py`` tunes its weights through the Gymnasium environment
``ember/Evacuation-v0``; ``examples/rl_campaign.toml`` evaluates it with the
official metrics through the campaign entry

    python = "rl_policy:make_policy"

``make_policy(scenario)`` is called once per episode with a fresh copy of the
scenario dict (campaign.md §1) and returns a callable ``observation ->
{person_id: action}`` on the official observation (simulator.md §4).  The
training script calls the very same ``LinearPolicy.choose`` on the arrays of
the environment's observation, so what was tuned is what is evaluated.

Standard library only: campaign workers need nothing but EMBER.

Each person scores its five actions with ``weights · features(action)`` plus
``noise * u`` (u uniform in [0, 1) from the policy's own RNG, to break the
symmetric deadlocks of a deterministic rule) and takes the best.  Features of
an action whose target cell is x (x = own cell for ``stay``):

- ``closer`` / ``farther``: x is one step nearer to / farther from a usable
  exit (distances through non-wall, non-burning cells, people ignored);
- ``blocked``: x is outside, a wall or burning (the move would not happen);
- ``occupied``: another active person stands on x now;
- ``contested``: how many other active people are next to x (they may claim it too);
- ``fire_near``: how many neighbours of x are burning;
- ``stay``: the action is ``stay``.
"""

import json
import os
import random
from collections import deque

ACTIONS = ("stay", "north", "south", "west", "east")
DELTAS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
FEATURES = ("closer", "farther", "blocked", "occupied", "contested", "fire_near", "stay")
PARAMETERS = FEATURES + ("noise",)
# Hand-set starting point (greedy-like); rl_weights.json, when present, holds tuned ones.
DEFAULT_WEIGHTS = {
    "closer": 1.0,
    "farther": -1.0,
    "blocked": -2.0,
    "occupied": -0.5,
    "contested": 0.0,
    "fire_near": 0.0,
    "stay": 0.0,
    "noise": 0.1,
}
WEIGHTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rl_weights.json")
UNREACHABLE = -1


def load_weights(path=None):
    """Weights from ``path`` (default: $EMBER_RL_WEIGHTS, else rl_weights.json here, else the defaults)."""
    path = path or os.environ.get("EMBER_RL_WEIGHTS") or WEIGHTS_FILE
    if not os.path.exists(path):
        return dict(DEFAULT_WEIGHTS)
    with open(path, encoding="utf-8") as f:
        weights = json.load(f)["weights"]
    if sorted(weights) != sorted(PARAMETERS):
        raise ValueError(f"{path}: weights must name exactly {', '.join(PARAMETERS)}, got {', '.join(sorted(weights))}")
    return {name: float(weights[name]) for name in PARAMETERS}


class LinearPolicy:
    """Scores each person's actions linearly over local features of its target cell."""

    def __init__(self, scenario, weights, rng_label="rl-example"):
        self.rows, self.cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
        cols = self.cols
        self.walls = {r * cols + c for r, c in scenario["walls"]}
        self.exits = [r * cols + c for r, c in (e["position"] for e in scenario["exits"])]
        self.weights = [weights[name] for name in FEATURES]
        self.noise = weights["noise"]
        # The policy's own RNG, seeded per scenario (a campaign policy never sees the episode seed).
        self.rng = random.Random(f"{rng_label}|{scenario['scenario_id']}")
        self._burning_count = None
        self._dist = None

    def _neighbours(self, cell):
        r, c = divmod(cell, self.cols)
        for dr, dc in DELTAS[1:]:
            rr, cc = r + dr, c + dc
            if 0 <= rr < self.rows and 0 <= cc < self.cols:
                yield rr * self.cols + cc

    def _distances(self, burning):
        """BFS distance to the nearest usable exit, recomputed only when the fire grew."""
        if len(burning) != self._burning_count:
            dist = [UNREACHABLE] * (self.rows * self.cols)
            queue = deque()
            for cell in self.exits:
                if cell not in burning:
                    dist[cell] = 0
                    queue.append(cell)
            while queue:
                cell = queue.popleft()
                for n in self._neighbours(cell):
                    if dist[n] == UNREACHABLE and n not in self.walls and n not in burning:
                        dist[n] = dist[cell] + 1
                        queue.append(n)
            self._dist, self._burning_count = dist, len(burning)
        return self._dist

    def choose(self, burning, people):
        """Actions for ``people`` (a list of (person_id, cell), ID order) given the set of burning cells."""
        dist = self._distances(burning)
        occupied = {cell for _, cell in people}
        rows, cols, weights = self.rows, self.cols, self.weights
        chosen = {}
        for pid, cell in people:
            r, c = divmod(cell, cols)
            own = dist[cell]
            best, best_score = 0, None
            for k, (dr, dc) in enumerate(DELTAS):
                rr, cc = r + dr, c + dc
                x = rr * cols + cc
                blocked = not (0 <= rr < rows and 0 <= cc < cols) or x in self.walls or x in burning
                if blocked:
                    features = (0, 0, 1, 0, 0, 0, k == 0)
                else:
                    there = dist[x]
                    closer = own != UNREACHABLE and there == own - 1
                    farther = (
                        there != UNREACHABLE
                        and own != UNREACHABLE
                        and there > own
                        or (there == UNREACHABLE and own != UNREACHABLE)
                    )
                    neighbours = list(self._neighbours(x))
                    features = (
                        closer,
                        farther,
                        0,
                        k != 0 and x in occupied,
                        sum(1 for n in neighbours if n in occupied and n != cell),
                        sum(1 for n in neighbours if n in burning),
                        k == 0,
                    )
                score = sum(w * f for w, f in zip(weights, features)) + self.noise * self.rng.random()
                if best_score is None or score > best_score:
                    best, best_score = k, score
            chosen[pid] = ACTIONS[best]
        return chosen

    def __call__(self, observation):
        """The campaign form: an official observation (simulator.md §4) in, actions out."""
        cols = self.cols
        burning = {r * cols + c for r, c in observation["burning"]}
        people = [(p["person_id"], p["position"][0] * cols + p["position"][1]) for p in observation["people"]]
        return self.choose(burning, people)


def make_policy(scenario):
    """The campaign's ``python`` entry: one fresh policy per episode (campaign.md §1)."""
    return LinearPolicy(scenario, load_weights())
