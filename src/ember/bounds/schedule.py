"""The fire schedule of bounds.md §1: when each cell ignites, with people playing no part.

The fire is the simulator's own (``sim.fire.FireSpread.spread``, rule 4 with
the episode's seed), stepped without a simulator: the draws never depend on
people, so the schedule is the fire of every episode of the seed.
"""

from ..sim.fire import FireSpread

#: 2^27: the most vertex-steps (|open| x T) a bound is computed for (bounds.md §3).
WORK_LIMIT = 2**27
#: b(c) of a cell that does not burn up to the last step simulated (bounds.md §1's ∞).
NEVER = 2**31 - 1


class FireSchedule:
    """b(c) for every cell (``NEVER`` where it does not burn), ``stable_step`` (fire_stable_step or None),
    ``open_count`` (|open|) and ``horizon`` = min(H, L), the last step simulated."""

    def __init__(self, scenario, seed):
        grid = scenario.grid
        self.open_count = sum(grid.open)
        horizon = min(scenario.max_steps, WORK_LIMIT // self.open_count)
        self.horizon = horizon
        ignite = [NEVER] * grid.size
        for cell in scenario.ignitions:
            ignite[cell] = 0
        self.ignite = ignite
        if scenario.spread_numerator == 0:
            self.stable_step = 0
            return
        fire = FireSpread(grid, seed, scenario.spread_numerator, scenario.spread_denominator)
        burning = bytearray(grid.size)
        for cell in scenario.ignitions:
            burning[cell] = 1
        fire.burn(scenario.ignitions, burning)
        self.stable_step = None
        # The frontier is exactly the open cells outside F_t with a 4-neighbour in F_t: empty, nothing ignites again.
        if not fire.frontier:
            self.stable_step = 0
            return
        for t in range(1, horizon + 1):
            for cell in fire.spread(t, burning):
                ignite[cell] = t
            if not fire.frontier:
                self.stable_step = t
                return


def fire_stable_step(scenario, seed):
    """bounds.md §1's ``fire_stable_step`` of a compiled scenario under ``seed`` (None when not reached)."""
    return FireSchedule(scenario, seed).stable_step
