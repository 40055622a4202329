"""Witness records (bounds.md §4): run records of joint action sequences that reach the bounds.

A maximum flow's units are vertex-disjoint paths, one per person who
evacuates (or survives).  ``WitnessPolicy`` turns them into moves, step by
step, from each observation (bounds.md §2's argument, made a policy):

- each path is a *role*, held by the person standing where the path is;
- a role whose next cell holds a person who holds no role is handed to that
  person, who stays (it is already where the path goes), and the one it
  replaces stops where it is and holds no role; repeated until nothing
  changes, so a chain of hand-offs ends;
- roles whose next cells form a cycle (a swap is one of two) pass round it:
  everyone on it stays and takes the role of the one who would have moved
  onto its cell;
- every other role holder moves along its path (chains move as a whole),
  and everyone else stays.

The episode runs through the one episode loop with the record writer as
its sink (``record.writer.run_episode``): the record is a genuine one,
which ``ember replay`` and ``ember metrics`` check without trusting the
flow.  A witness that misses its bound is a defect, raised as such.
"""

import os

from ..errors import BoundsError
from ..files import output_files
from ..record.writer import run_episode
from ..scenario import compile_scenario
from ..sim.simulator import CASUALTY, EVACUATED, check_seed
from .episode import EpisodeBounds
from .schedule import WORK_LIMIT

EVACUATED_FILE = "evacuated.record"
CASUALTIES_FILE = "casualties.record"


class WitnessPolicy:
    """A policy that plays the paths of a flow (``Network.paths``), with the hand-offs above."""

    def __init__(self, scenario, paths):
        self.cols = scenario.grid.cols
        starter = {cell: pid for pid, cell in zip(scenario.person_ids, scenario.start_cells)}
        # A role: the cells of its path at steps 0..k, the exit cell it enters at k + 1 (or None), its holder.
        self.roles = [
            [cells, None if exit_index is None else scenario.exit_cells[exit_index], starter[cells[0]]]
            for cells, exit_index in paths
        ]

    def target(self, role, t):
        """Where ``role`` is at the end of step t (None once it has left through its exit)."""
        cells, exit_cell, _ = role
        if t < len(cells):
            return cells[t]
        if exit_cell is None:
            return cells[-1]  # alive at T_s: it stays from then on
        return exit_cell if t == len(cells) else None

    def direction(self, origin, target):
        (r0, c0), (r1, c1) = divmod(origin, self.cols), divmod(target, self.cols)
        return {(-1, 0): "north", (1, 0): "south", (0, -1): "west", (0, 1): "east"}[(r1 - r0, c1 - c0)]

    def __call__(self, observation):
        t, cols = observation["step"], self.cols
        position = {p["person_id"]: p["position"][0] * cols + p["position"][1] for p in observation["people"]}
        occupant = {cell: pid for pid, cell in position.items()}
        live = [role for role in self.roles if self.target(role, t) is not None]
        holders = {}
        for role in live:
            cur = self.target(role, t - 1)
            if position.get(role[2]) != cur:
                raise RuntimeError(f"bounds witness: step {t}: the holder of a path is not on its cell {cur}")
            holders[role[2]] = role
        held = set()  # roles handed over this step: their new holder is already on the next cell
        changed = True
        while changed:  # hand-offs to people without a role standing on a path's next cell
            changed = False
            for role in live:
                cur, nxt = self.target(role, t - 1), self.target(role, t)
                other = occupant.get(nxt)
                if nxt != cur and other is not None and other not in holders:
                    del holders[role[2]]
                    role[2] = other
                    holders[other] = role
                    held.add(id(role))
                    changed = True
        movers = {}
        for role in live:
            cur, nxt = self.target(role, t - 1), self.target(role, t)
            if id(role) in held or nxt == cur:
                continue
            movers[id(role)] = role
        # Cycles among movers: each follows the holder standing on its next cell.
        following = {}
        for key, role in movers.items():
            other = occupant.get(self.target(role, t))
            if other is not None:
                ahead = holders[other]
                if id(ahead) not in movers:
                    raise RuntimeError(f"bounds witness: step {t}: a path moves onto a cell whose holder stays")
                following[key] = id(ahead)
        staying = set()
        done = set()
        for key in movers:
            path, k = [], key
            while k in following and k not in done and k not in path:
                path.append(k)
                k = following[k]
            if k in path:  # a cycle: from its first visit on
                cycle = path[path.index(k) :]
                taken = {c: movers[following[c]][2] for c in cycle}
                for c in cycle:
                    movers[c][2] = taken[c]
                staying.update(cycle)
            done.update(path)
        actions = dict.fromkeys(position, "stay")
        for key, role in movers.items():
            if key not in staying:
                actions[role[2]] = self.direction(self.target(role, t - 1), self.target(role, t))
        return actions


def witness_records(scenario, seed, directory):
    """Write ``directory/evacuated.record`` and ``directory/casualties.record`` (bounds.md §4); the bounds.

    Refused with ``BoundsError("no witness: ...")``, writing nothing, when a
    record of H steps would exceed the work limit (so always when the bounds are null).
    """
    sc = compile_scenario(scenario)
    seed = check_seed(seed)
    open_count = sum(sc.grid.open)
    # Null bounds (W = |open| x T_used > 2^27, T_used <= H) are refused here too, before any flow is computed.
    if open_count * sc.max_steps > WORK_LIMIT:
        raise BoundsError(
            f"no witness: |open| x H = {open_count} x {sc.max_steps} = {open_count * sc.max_steps} exceeds 2^27 "
            "(a record may run to H steps)"
        )
    bounds = EpisodeBounds(sc, seed, paths=True)
    os.makedirs(directory, exist_ok=True)
    wanted = ((bounds.evacuated_paths, EVACUATED, bounds.evacuated_max), (bounds.survivor_paths, CASUALTY, None))
    paths = [os.path.join(directory, EVACUATED_FILE), os.path.join(directory, CASUALTIES_FILE)]
    with output_files(*paths) as streams:
        for stream, (flow_paths, status, count) in zip(streams, wanted):
            final = run_episode(sc, WitnessPolicy(sc, flow_paths), seed, stream)
            reached = sum(person["status"] == status for person in final["people"])
            expected = bounds.casualties_min if status == CASUALTY else count
            if reached != expected:
                raise RuntimeError(
                    f"bounds witness: the {status} record reaches {reached}, the bound is {expected}: a defect"
                )
    return bounds
