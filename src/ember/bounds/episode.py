"""The bounds of one episode (bounds.md §2–4): evacuated_max, casualties_min, fire_stable_step, limit."""

import numpy as np

from ..canonical import canonical_json
from ..scenario import compile_scenario
from ..sim.simulator import check_seed
from ..versions import BOUNDS_VERSION
from .network import Floor, Network, Reach, Taken, dilate
from .schedule import WORK_LIMIT, FireSchedule

#: The first horizon past fire_stable_step tried when looking for a flow that reaches the shortcut's value.
FIRST_EXTRA_STEPS = 16
#: Exact networks of at most this many vertices are solved at once, without short horizons first.
SMALL_NETWORK = 20_000
#: The first short horizon tried for a floor of the survivors (then 4 times as many steps, and so on) ...
SURVIVORS_FIRST_STEPS = 8
#: ... while its network keeps under this share of the survivors' network's vertices.
SURVIVORS_SHARE = 0.5
#: Early horizons grow by a quarter each try (bounds.md's values never depend on it, only the work does).
EARLY_GROWTH_DIVISOR = 4
#: Short horizons are tried while their network keeps under this share of the exact network's vertices ...
EARLY_SHARE = 0.85
#: ... and while all of them so far stay under this multiple of it.
EARLY_BUDGET = 2


def early_horizons(floor, starts, exact):
    """The horizons T < ``exact`` tried first for evacuated_max, from the least by which the ``starts`` (the
    people who alone reach an exit) could all be out: each walks at least its distance to an exit, and each
    step lets at most one person into each exit."""
    exits = max(1, sum(1 for cell in floor.exit_cells if int(floor.ignite.flat[cell]) > 0))
    steps = max(1, int(floor.exit_distance()[floor.starts][starts].max()), -(-len(starts) // exits))
    while steps < exact:
        yield steps
        steps += max(-(-steps // EARLY_GROWTH_DIVISOR), 1)


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
        self.shortcut = self.cut = None  # the shortcut network, the last cut network (``Reach``): with their flows
        self.evacuated_max, self.evacuated_paths = self.evacuation(floor, region, shortcut, paths)
        # An evacuated person is no casualty, so the survivors' flow is at least evacuated_max; at most, it is
        # the number of people who alone can still be alive at T_s.  Where the two meet, no second flow.
        reach = Reach(floor, survive_steps, floor.standing)
        if self.evacuated_max == n or len(reach.starts) == self.evacuated_max or self.survivors_cut(floor, reach):
            self.casualties_min, self.survivor_paths = n - self.evacuated_max, self.evacuated_paths
            return
        # casualties_min: alive at T_s is alive at H (nothing ignites after fire_stable_step; staying is allowed).
        network = Network(floor, survive_steps, floor.standing)
        if self.shortcut is not None and not paths and self.shortcut[0].same(network):
            self.casualties_min = n - self.shortcut[1]  # the shortcut network again (A holds its last vertices)
            return
        settled, found = self.survivors_floor(floor, reach, paths) if reach.vertices > SMALL_NETWORK else (False, None)
        if settled:
            self.casualties_min, self.survivor_paths = n - len(reach.starts), found
            return
        survivors, self.survivor_paths = network.solve(paths)
        self.casualties_min = n - survivors

    def survivors_floor(self, floor, reach, paths):
        """(True, paths) of a flow of G_T (T short) with sink arcs at T from the cells that never burn up to
        T_s, when it keeps every person of ``reach`` alive (the ceiling), else (False, None).  Such a flow's people stay
        where they are from T on, holding cells no other path needs after T, so it is a floor of the
        survivors."""
        safe = floor.standing & (floor.ignite > reach.horizon)
        steps = SURVIVORS_FIRST_STEPS
        while steps < reach.horizon:
            network = Network(floor, steps, safe)
            if network.vertices > SURVIVORS_SHARE * reach.vertices:
                break
            value, found = network.solve(paths)
            if value == len(reach.starts):
                return True, found
            steps *= 4
        return False, None

    def survivors_cut(self, floor, reach):
        """Whether the survivors' network cut at the last short horizon (a ceiling of its flow, ``Reach``)
        lets no more people live than evacuated_max: the same network as the evacuation's cut, or small."""
        if self.cut is None or self.cut[0].horizon > reach.horizon:
            return False
        evacuation_cut, value = self.cut
        steps = evacuation_cut.horizon
        network = Network(floor, steps, reach.back[steps])
        if not network.same(evacuation_cut):
            if network.vertices > EARLY_SHARE * reach.vertices:
                return False
            value, _ = network.solve()
        return value == self.evacuated_max

    def evacuation(self, floor, region, shortcut, paths):
        """evacuated_max and, with ``paths``, the paths of a flow of real exits reaching it.

        The exact network is G_H, or, past a fire_stable_step t_s < H, the shortcut network of bounds.md §3
        (G_{t_s} with sink arcs from A): no G_T exceeds its flow, and it is the value when H - t_s >= n·|A|.
        Short horizons T are tried first (``early_flow``); what they cannot settle the exact network does.
        """
        horizon, stable = floor.max_steps, self.stable_step
        exact, final = (horizon, None) if stable is None or stable == horizon else (stable, region)
        reach = Reach(floor, exact, final)
        if len(reach.starts) == 0:
            return 0, [] if paths else None
        # On a small exact network, trying short horizons costs more than it can save.
        if reach.vertices <= SMALL_NETWORK:
            best, ceiling = (0, [] if paths else None), len(reach.starts)
        else:
            best, ceiling = self.early_flow(floor, reach, paths)
        if best[0] == ceiling:
            return best
        if exact == horizon:
            return Network(floor, horizon).solve(paths)
        network = Network(floor, stable, region)
        ceiling, _ = network.solve()
        self.shortcut = network, ceiling
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

    def stragglers(self, floor, reach, steps, value, found, paths, ceiling):
        """(value, paths): the flow ``found`` at ``steps`` and, horizon after horizon, flows of the people it
        leaves in, each in G_T without the vertices and exit steps the paths so far hold (``Taken``): all
        together one flow of the last G_T, a floor of evacuated_max.  Their networks are thin (around each
        straggler's way out); this stops at ``ceiling``, or when a horizon adds nobody."""
        held = list(found)
        while value < ceiling and steps < reach.horizon:
            steps = min(reach.horizon, steps + max(-(-steps // EARLY_GROWTH_DIVISOR), 1))
            used = {cells[0] for cells, _ in held}
            rest = [floor.starts[i] for i in reach.starts if floor.starts[i] not in used]
            network = Network(floor, steps, starts=rest, taken=Taken(floor, steps, held))
            if network.vertices > EARLY_SHARE * reach.vertices:
                break
            more, extra = network.solve(True)
            if more == 0:
                break
            value += more
            held += extra
        return value, held if paths else None

    def early_flow(self, floor, reach, paths):
        """((value, paths), ceiling): the best flow of G_T over short horizons T, and the least ceiling seen.

        A flow of G_T (T <= H) is a flow of G_H, so a floor of evacuated_max; the people of ``reach`` and
        the flow of the exact network cut at step T (``Reach``) are ceilings.  Where floor and ceiling meet,
        that is the value; G_T is far smaller than the exact network when people are out long before H.
        T grows from the least step by which the ceiling's people could all be out, while the networks
        stay well below the exact one's size (the work, never a value, depends on these choices).
        """
        ceiling = len(reach.starts)
        best = (0, [] if paths else None)
        exits = max(1, len(floor.exit_cells))
        work, last, cut = 0, None, False
        for steps in early_horizons(floor, reach.starts, reach.horizon):
            network = Network(floor, steps)
            size = network.vertices
            if size > EARLY_SHARE * reach.vertices or work > EARLY_BUDGET * reach.vertices:
                # Before the exact network, the cut ceiling at the last horizon tried, when smaller.
                if last is not None and not cut and reach.upto[last[0]] <= EARLY_SHARE * reach.vertices:
                    network = Network(floor, last[0], reach.back[last[0]])
                    upper, _ = network.solve()
                    self.cut = network, upper
                    ceiling = min(ceiling, upper)
                break
            value, found = network.solve(True)
            del network
            work += size
            if value == ceiling:
                return (value, found if paths else None), ceiling
            if value > best[0]:
                best = value, found if paths else None
            # The people left in, on the next horizon, around the paths found.
            more = self.stragglers(floor, reach, steps, value, found, paths, ceiling)
            if more[0] > best[0]:
                best = more
                if best[0] == ceiling:
                    return best, ceiling
            # Some people cannot get out even alone (the fire binds), or few more got out than the exits could
            # take: a ceiling other than the exits' binds, and the cut network may show it.
            binds = value - last[1] <= exits * (steps - last[0]) // 4 if last else ceiling < self.population
            if binds and reach.upto[steps] <= EARLY_SHARE * reach.vertices:
                self.cut = Network(floor, steps, reach.back[steps]), None
                upper, _ = self.cut[0].solve()
                self.cut = self.cut[0], upper
                work += int(reach.upto[steps])
                ceiling, cut = min(ceiling, upper), True
                if best[0] == ceiling:
                    return best, ceiling
            if steps + -(-(ceiling - value) // exits) >= reach.horizon:
                break  # the people missing need more steps than are left before the exact horizon
            last, cut = (steps, value), False
        return best, ceiling

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
