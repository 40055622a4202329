"""The bounds of one episode (bounds.md §2–4): evacuated_max, casualties_min, fire_stable_step, limit."""

import numpy as np

from ..canonical import canonical_json
from ..scenario import compile_scenario
from ..sim.simulator import check_seed
from ..versions import BOUNDS_VERSION
from .network import Floor, Network, dilate, reachable_starts
from .schedule import WORK_LIMIT, FireSchedule

#: The first horizon past fire_stable_step tried when looking for a flow that reaches the shortcut's value.
FIRST_EXTRA_STEPS = 16
#: Early horizons grow by a quarter each try (bounds.md's values never depend on it, only the work does).
EARLY_GROWTH_DIVISOR = 4


def early_horizons(floor, starts, exact):
    """The horizons T < ``exact`` tried first for evacuated_max, from the least by which the ``starts`` (the
    people who alone reach an exit) could all be out: each walks at least its distance to an exit, and each
    step lets at most one person into each exit."""
    exits = max(1, sum(1 for cell in floor.exit_cells if int(floor.ignite.flat[cell]) > 0))
    steps = max(1, int(floor.exit_distance()[floor.starts][starts].max()), -(-len(starts) // exits))
    while steps < exact:
        yield steps
        steps += max(-(-steps // EARLY_GROWTH_DIVISOR), 1)


def early_horizon_pays(floor, ceiling, value, steps, exact):
    """Whether a next, larger early horizon is worth a try after a flow of ``value`` at ``steps``: not when
    the people missing need more steps than are left, one per exit and step."""
    exits = max(1, len(floor.exit_cells))
    return steps + -(-(ceiling - value) // exits) < exact


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
        survive_steps = horizon if stable is None else min(horizon, stable)
        self.shortcut_flow = None
        self.evacuated_max, self.evacuated_paths = self.evacuation(floor, region, shortcut, paths)
        # An evacuated person is no casualty, so the survivors' flow is at least evacuated_max; at most, it is
        # the number of people who alone can still be alive at T_s.  Where the two meet, no second flow.
        if self.evacuated_max == n or len(reachable_starts(floor, survive_steps, floor.standing)) == (
            self.evacuated_max
        ):
            self.casualties_min, self.survivor_paths = n - self.evacuated_max, self.evacuated_paths
            return
        # With the shortcut and A every cell alive at t_s, the survivors' network is the shortcut network.
        if self.shortcut_flow is not None and not paths and np.array_equal(region, floor.alive(stable)):
            self.casualties_min = n - self.shortcut_flow
            return
        # casualties_min: alive at T_s is alive at H (nothing ignites after fire_stable_step; staying is allowed).
        survivors, self.survivor_paths = Network(floor, survive_steps, floor.standing).solve(paths)
        self.casualties_min = n - survivors

    def evacuation(self, floor, region, shortcut, paths):
        """evacuated_max and, with ``paths``, the paths of a flow of real exits reaching it.

        The exact network is G_H, or, past a fire_stable_step t_s < H, the shortcut network of bounds.md §3
        (G_{t_s} with sink arcs from A): no G_T exceeds its flow, and it is the value when H - t_s >= n·|A|.
        Its people who alone reach its sink are a ceiling too.  G_T for T growing from the least step by
        which they could all be out is tried first: when its flow reaches that ceiling, that is the value,
        and G_T is far smaller than the exact network when people are out long before H (or t_s).
        """
        horizon, stable = floor.max_steps, self.stable_step
        exact, final = (horizon, None) if stable is None or stable == horizon else (stable, region)
        starts = reachable_starts(floor, exact, final)
        ceiling = len(starts)
        if ceiling == 0:
            return 0, [] if paths else None
        best = (0, None)
        for steps in early_horizons(floor, starts, exact):
            value, found = Network(floor, steps).solve(paths)
            if value == ceiling:
                return value, found
            best = max(best, (value, found), key=lambda pair: pair[0])
            if not early_horizon_pays(floor, ceiling, value, steps, exact):
                break
        if exact == horizon:
            return Network(floor, horizon).solve(paths)
        ceiling, _ = Network(floor, stable, region).solve()
        self.shortcut_flow = ceiling
        if best[0] == ceiling:
            return best
        if shortcut and not paths:
            return ceiling, None
        # No flow of G_T (T >= t_s) exceeds the shortcut network's: people outside A at t_s never reach an
        # exit.  G_T for growing T is solved until it reaches the value, or T = H.
        steps = stable + FIRST_EXTRA_STEPS
        while True:
            steps = min(horizon, steps)
            value, found = Network(floor, steps).solve(paths)
            if value == ceiling or steps == horizon:
                return value, found
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
