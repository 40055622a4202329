"""The bounds solver (src/ember/bounds/) against the approach it replaced, on every key of ember-v1.

Measured in one run, CPU time (resource.getrusage, the machine is shared):

- new / reference: ``EpisodeBounds`` against a copy of the approach the
  bounds were first computed with (kept below, ``reference_bounds``): the
  same pruned network built whole, OR-Tools' ``SimpleMaxFlow`` on it, the
  casualties network always solved.  Both use the same solver: the
  difference is the networks solved.  Both values must agree on every key.
  Whole keys, and the flow stage alone: less the part both share (the
  scenario compiled, the fire schedule, the floor), measured apart.  Small
  and medium keys: the least of 3 rounds (new, reference, shared, planner
  interleaved) when a key takes under half a second.
- planner: evaluating the built-in planner on the same keys (an episode
  to termination through ``run_episode``, the record written to memory)
  against the bounds of those keys.
- the large tier, one key at a time in a child process each (new, then
  reference): its CPU and its peak RSS (``os.wait4``).  The child imports
  OR-Tools and computes a small key first, as a worker does once.

Printed: one line per key, then the summary table (the ratios).

Usage::

    python benchmarks/bench_bounds.py            # the 72 keys of `ember suite ember-v1` (about 10 CPU minutes)
    python benchmarks/bench_bounds.py --quick    # seed 0 of the small tier, one large key
"""

import argparse
import io
import json
import os
import resource
import subprocess
import sys

import numpy as np

from ember.bounds.episode import EpisodeBounds, shortcut_region
from ember.bounds.network import MOVES, Floor, dilate
from ember.bounds.schedule import WORK_LIMIT, FireSchedule
from ember.generate.suite import CAMPAIGN_SEEDS, suite_entries
from ember.record.writer import run_episode
from ember.scenario import compile_scenario

WARM_UP = "builtin:small-room"
ROUNDS = 3


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---- The reference: the approach of the first bounds solver, as it was. ----


def reference_flow(nodes, tails, heads, source, sink):
    from ortools.graph.python.max_flow import SimpleMaxFlow

    solver = SimpleMaxFlow()
    solver.add_arcs_with_capacity(tails, heads, np.ones(len(tails), dtype=np.int64))
    status = solver.solve(source, sink)
    if status != solver.OPTIMAL:
        raise RuntimeError(f"OR-Tools' max flow ended with status {status} on {nodes} nodes")
    return int(solver.optimal_flow())


class ReferenceNetwork:
    """G_T pruned from both ends, every arc built (numpy) and handed to OR-Tools at once."""

    def __init__(self, floor, horizon, final=None):
        rows, cols, size = floor.rows, floor.cols, floor.size
        start = np.zeros((rows, cols), dtype=bool)
        start.flat[floor.starts] = True
        layers = [floor.alive(t) for t in range(horizon + 1)]
        forward = [layers[0] & start]
        for t in range(1, horizon + 1):
            forward.append(layers[t] & dilate(forward[-1]))
        keep = [None] * (horizon + 1)
        back = layers[horizon] & final if final is not None else np.zeros((rows, cols), dtype=bool)
        keep[horizon] = forward[horizon] & back
        for t in range(horizon - 1, -1, -1):
            back = layers[t] & (dilate(back) | floor.exit_reach(t + 1))
            keep[t] = forward[t] & back
        del layers, forward
        kept = np.stack(keep)
        del keep
        where = np.flatnonzero(kept)
        vertices = len(where)
        exits = len(floor.exit_cells)
        exit_base = 2 * vertices
        self.source = 2 * vertices + exits * horizon
        self.sink = self.source + 1
        self.nodes = self.sink + 1
        vid = np.full(kept.shape, -1, dtype=np.int32)
        vid.flat[where] = np.arange(vertices, dtype=np.int32)
        del kept
        tails, heads = [], []
        everyone = np.arange(vertices, dtype=np.int32)
        tails.append(2 * everyone)
        heads.append(2 * everyone + 1)
        del everyone
        first = vid[0].ravel()[floor.starts]
        first = first[first >= 0]
        tails.append(np.full(len(first), self.source, dtype=np.int32))
        heads.append(2 * first)
        for dr, dc in MOVES:
            r0, r1 = max(0, -dr), rows - max(0, dr)
            c0, c1 = max(0, -dc), cols - max(0, dc)
            origin = vid[:-1, r0:r1, c0:c1]
            target = vid[1:, r0 + dr : r1 + dr, c0 + dc : c1 + dc]
            both = (origin >= 0) & (target >= 0)
            tails.append(2 * origin[both] + 1)
            heads.append(2 * target[both])
            del origin, target, both
        flat = vid.reshape(horizon + 1, size)
        for k, (exit_cell, around) in enumerate(zip(floor.exit_cells, floor.exit_neighbours)):
            usable = min(horizon, int(floor.ignite.flat[exit_cell]))
            if usable < 1:
                continue
            steps = np.arange(1, usable + 1, dtype=np.int32)
            node = exit_base + k * horizon + steps - 1
            for cell in around:
                origin = flat[steps - 1, cell]
                used = origin >= 0
                tails.append(2 * origin[used] + 1)
                heads.append(node[used])
            tails.append(node)
            heads.append(np.full(len(node), self.sink, dtype=np.int32))
        if final is not None:
            last = flat[horizon][flat[horizon] >= 0]
            tails.append(2 * last + 1)
            heads.append(np.full(len(last), self.sink, dtype=np.int32))
        del vid, flat
        self.tails = np.concatenate(tails)
        self.heads = np.concatenate(heads)

    def solve(self):
        return reference_flow(self.nodes, self.tails, self.heads, self.source, self.sink)


def reference_bounds(source, seed):
    """(evacuated_max, casualties_min) the reference way (None, None over the limit)."""
    sc = compile_scenario(source)
    schedule = FireSchedule(sc, seed)
    n, stable, horizon = len(sc.person_ids), schedule.stable_step, sc.max_steps
    floor = Floor(sc, schedule.ignite)
    region = shortcut_region(floor, stable) if stable is not None else None
    shortcut = stable is not None and horizon - stable >= n * int(region.sum())
    if schedule.open_count * (stable if shortcut else horizon) > WORK_LIMIT:
        return None, None
    survive_steps = horizon if stable is None else min(horizon, stable)
    casualties = n - ReferenceNetwork(floor, survive_steps, floor.standing).solve()
    if stable is None or stable == horizon:
        return ReferenceNetwork(floor, horizon).solve(), casualties
    ceiling = ReferenceNetwork(floor, stable, region).solve()
    if shortcut:
        return ceiling, casualties
    steps = stable + 16
    while True:
        steps = min(horizon, steps)
        value = ReferenceNetwork(floor, steps).solve()
        if value == ceiling or steps == horizon:
            return value, casualties
        steps = stable + 2 * (steps - stable)


def new_bounds(source, seed):
    found = EpisodeBounds(source, seed)
    return found.evacuated_max, found.casualties_min


def shared_part(source, seed):
    """What both approaches do before any network: the scenario, the fire schedule, the floor, A."""
    sc = compile_scenario(source)
    schedule = FireSchedule(sc, seed)
    floor = Floor(sc, schedule.ignite)
    if schedule.stable_step is not None:
        shortcut_region(floor, schedule.stable_step)


def warm_up():
    """Import OR-Tools and run one small key, as a worker does once before its first real key."""
    new_bounds(WARM_UP, 0)
    reference_bounds(WARM_UP, 0)


# ---- Measuring. ----

APPROACHES = {"new": new_bounds, "reference": reference_bounds, "shared": shared_part}


def timed(approach, source, seed):
    before = cpu()
    values = APPROACHES[approach](source, seed)
    return values, cpu() - before


def planner_cpu(source, seed):
    before = cpu()
    run_episode(source, "planner", seed, io.BytesIO())
    return cpu() - before


def in_child(approach, source, seed):
    """(values, CPU of the computation, peak RSS in bytes of the whole child) of one key in a fresh process."""
    command = [sys.executable, __file__, "--child", approach, source, str(seed)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    out = child.stdout.read()
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{approach} {source} seed {seed}: the child exited {child.returncode}")
    values, seconds = json.loads(out)
    return tuple(values), seconds, usage.ru_maxrss * 1024


def child(approach, source, seed):
    warm_up()
    values, seconds = timed(approach, source, seed)
    print(json.dumps([values, seconds]))


def keys(quick):
    for entry in suite_entries("ember-v1"):
        if quick and entry.tier != "small":
            continue
        for seed in range(1 if quick else CAMPAIGN_SEEDS[entry.tier]):
            yield entry.tier, entry.source, seed


def mib(size):
    return f"{size / 2**20:,.0f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seed 0 of the small tier, and large-office-casualty")
    parser.add_argument("--tier", choices=("small", "medium", "large"), action="append", help="only this tier")
    parser.add_argument("--child", nargs=3, metavar=("APPROACH", "SOURCE", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]))
    warm_up()
    rows = []
    for tier, source, seed in keys(args.quick):
        if args.tier and tier not in args.tier:
            continue
        if tier == "large":
            new, new_s, new_rss = in_child("new", source, seed)
            ref, ref_s, ref_rss = in_child("reference", source, seed)
            _, shared_s = timed("shared", source, seed)
            plan_s = planner_cpu(source, seed)
        else:
            new_s = ref_s = shared_s = plan_s = float("inf")
            new_rss = ref_rss = None
            for _ in range(ROUNDS):
                (new, one), (ref, other) = timed("new", source, seed), timed("reference", source, seed)
                new_s, ref_s = min(new_s, one), min(ref_s, other)
                shared_s = min(shared_s, timed("shared", source, seed)[1])
                plan_s = min(plan_s, planner_cpu(source, seed))
                if ref_s > 0.5:
                    break
        if new != ref:
            raise SystemExit(f"{source} seed {seed}: the new solver gives {new}, the reference {ref}")
        rows.append((tier, source, seed, new, new_s, ref_s, plan_s, new_rss, ref_rss, shared_s))
        rss = f", peak RSS {mib(new_rss)} / {mib(ref_rss)}" if tier == "large" else ""
        print(
            f"{source} seed {seed}: {new}  new {new_s:.3f} s  reference {ref_s:.3f} s  shared {shared_s:.3f} s"
            f"  planner {plan_s:.2f} s{rss}"
        )
        sys.stdout.flush()
    if args.quick:
        source = "builtin:ember-v1/large-office-casualty"
        new, new_s, new_rss = in_child("new", source, 0)
        ref, ref_s, ref_rss = in_child("reference", source, 0)
        if new != ref:
            raise SystemExit(f"{source}: the new solver gives {new}, the reference {ref}")
        rows.append(("large", source, 0, new, new_s, ref_s, None, new_rss, ref_rss, timed("shared", source, 0)[1]))
    summary(rows, args.quick)


def summary(rows, quick):
    print()
    print(f"| {'measure':<58} | {'value':>26} |")
    print(f"|{'-' * 60}|{'-' * 27}:|")

    def line(measure, value):
        print(f"| {measure:<58} | {value:>26} |")

    for tier in ("small", "medium", "large"):
        part = [r for r in rows if r[0] == tier]
        if not part:
            continue
        new = sum(r[4] for r in part)
        ref = sum(r[5] for r in part)
        worst = min(r[5] / r[4] for r in part)
        shared = sum(r[9] for r in part)
        flow = min((r[5] - r[9]) / max(r[4] - r[9], 1e-6) for r in part)
        line(f"{tier}: {len(part)} keys, CPU new / reference", f"{new:.2f} s / {ref:.2f} s")
        line(f"{tier}: speed-up, whole keys (least of one key)", f"{ref / new:.1f}x ({worst:.1f}x)")
        line(
            f"{tier}: speed-up, flow stage (least of one key)",
            f"{(ref - shared) / (new - shared):.1f}x ({flow:.1f}x)",
        )
    planned = [r for r in rows if r[6] is not None]
    bounds = sum(r[4] for r in planned)
    plans = sum(r[6] for r in planned)
    ratio = f"{plans:.1f} s / {bounds:.1f} s ({plans / bounds:.2f}x)"
    line(f"{len(planned)} keys: CPU planner evaluation / bounds", ratio)
    small = [r for r in rows if r[0] == "small"]
    if small:
        slowest = max(small, key=lambda r: r[4])
        line(f"slowest small key ({slowest[1].split('/')[-1]} seed {slowest[2]})", f"{slowest[4]:.3f} s")
    for r in rows:
        if r[0] == "large":
            name = r[1].split("/")[-1]
            line(f"{name}: CPU new / reference", f"{r[4]:.2f} s / {r[5]:.2f} s ({r[5] / r[4]:.1f}x)")
            line(f"{name}: peak RSS new / reference", f"{mib(r[7])} / {mib(r[8])}")
    if quick:
        print("(--quick: seed 0 of the small tier and one large key; the full run has the 72 keys of ember-v1)")


if __name__ == "__main__":
    main()
