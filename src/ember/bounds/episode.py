"""The bounds of one episode (bounds.md §2–4): evacuated_max, casualties_min, fire_stable_step, limit."""

import numpy as np

from ..canonical import canonical_json
from ..scenario import compile_scenario
from ..sim.simulator import check_seed
from ..versions import BOUNDS_VERSION
from .network import Floor, Network, dilate
from .schedule import WORK_LIMIT, FireSchedule

#: The first horizon past fire_stable_step tried when looking for a flow that reaches the shortcut's value.
FIRST_EXTRA_STEPS = 16


def shortcut_region(floor, stable):
    """A of bounds.md §3: the components of open ∖ E ∖ F_{t_s} with a cell next to an exit outside F_{t_s}."""
    region = floor.alive(stable)
    seeds = region & floor.exit_reach(stable + 1)  # next to an exit with b(e) > t_s
    reached = seeds
    while True:
        grown = region & dilate(reached)
        if np.array_equal(grown, reached):
            return reached
        reached = grown


class EpisodeBounds:
    """The values of one episode and, when asked for, the flows that reach them (for the witness).

    ``evacuated_paths`` and ``survivor_paths`` are the units of a maximum flow
    in a network of real exits (``Network.paths``): of G_T for some T <= H
    that reaches evacuated_max, and of G_{T_s} with its sink arcs at T_s.
    """

    def __init__(self, scenario, seed, paths=False):
        self.scenario = sc = compile_scenario(scenario)
        self.seed = check_seed(seed)
        schedule = FireSchedule(sc, seed)
        self.population = n = len(sc.person_ids)
        self.stable_step = stable = schedule.stable_step
        self.open_count = schedule.open_count
        horizon = sc.max_steps
        floor = Floor(sc, schedule.ignite)
        region = shortcut_region(floor, stable) if stable is not None else None
        shortcut = stable is not None and horizon - stable >= n * int(region.sum())
        self.used_steps = stable if shortcut else horizon
        work = self.open_count * self.used_steps
        self.evacuated_max = self.casualties_min = self.limit = None
        self.evacuated_paths = self.survivor_paths = None
        if work > WORK_LIMIT:
            self.limit = f"W = {work} exceeds 2^27"
            return
        # casualties_min: alive at T_s is alive at H (nothing ignites after fire_stable_step; staying is allowed).
        survive_steps = horizon if stable is None else min(horizon, stable)
        survivors, self.survivor_paths = Network(floor, survive_steps, floor.standing).solve(paths)
        self.casualties_min = n - survivors
        if stable is None or stable == horizon:
            self.evacuated_max, self.evacuated_paths = Network(floor, horizon).solve(paths)
            return
        # No flow of G_T (T >= t_s) exceeds the shortcut network's: people outside A at t_s never reach
        # an exit.  With the shortcut's condition that value is evacuated_max; otherwise (or for the
        # witness's paths) G_T for growing T is solved until it reaches the value, or T = H.
        ceiling, _ = Network(floor, stable, region).solve()
        if shortcut and not paths:
            self.evacuated_max = ceiling
            return
        steps = stable + FIRST_EXTRA_STEPS
        while True:
            steps = min(horizon, steps)
            value, found = Network(floor, steps).solve(paths)
            if value == ceiling or steps == horizon:
                self.evacuated_max, self.evacuated_paths = value, found
                return
            steps = stable + 2 * (steps - stable)

    def as_dict(self):
        """bounds.md §4's object."""
        sc = self.scenario
        return {
            "bounds_version": BOUNDS_VERSION,
            "scenario_id": sc.scenario_id,
            "scenario_hash": sc.hash,
            "seed": self.seed,
            "population": self.population,
            "evacuated_max": self.evacuated_max,
            "casualties_min": self.casualties_min,
            "fire_stable_step": self.stable_step,
            "limit": self.limit,
        }


def episode_bounds(scenario, seed):
    """bounds.md §4's object of one episode (a scenario source or compiled scenario, and a seed)."""
    return EpisodeBounds(scenario, seed).as_dict()


def bounds_line(scenario, seed):
    """The canonical JSON line of one episode's bounds (simulator.md §1: keys sorted), newline-terminated."""
    return canonical_json(episode_bounds(scenario, seed)) + b"\n"
