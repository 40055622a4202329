"""The time-expanded networks G_T of bounds.md §2, built as numpy arrays, and their maximum flows.

A vertex (c, t) is a cell c a person may stand on, alive, at the end of
step t; it is split into an in-node 2v and an out-node 2v + 1 joined by one
unit, so at most one person ends a step on a cell.  An exit vertex [e, t]
has one arc, to the sink, so it needs no split.  Only vertices reachable
from a person's start and able to reach the sink are kept: the others carry
no flow, and on a large floor they are most of the network.

Arcs are made a direction at a time from the layers of kept vertices (no
loop over arcs in Python): a 200 x 200 floor over 600 steps has tens of
millions of them.
"""

import numpy as np

from ..grid.breadth_first import lower_distances
from .solver import maximum_flow

#: The most vertices (or cells x steps) one group of arcs is made from: a few MiB at a time.
CHUNK = 1 << 20
#: A move of one step: the stay, then north, south, west, east, as (row, col) offsets.
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))


def dilate(layer):
    """The cells of the 2-D boolean ``layer`` and their 4-neighbours."""
    grown = layer.copy()
    grown[1:, :] |= layer[:-1, :]
    grown[:-1, :] |= layer[1:, :]
    grown[:, 1:] |= layer[:, :-1]
    grown[:, :-1] |= layer[:, 1:]
    return grown


class Floor:
    """The episode's cells as numpy arrays: ``ignite`` (b(c)), ``standing`` cells (open, not exits), exits."""

    def __init__(self, scenario, ignite):
        grid = scenario.grid
        self.rows, self.cols, self.size = grid.rows, grid.cols, grid.size
        self.ignite = np.asarray(ignite, dtype=np.int32).reshape(grid.rows, grid.cols)
        is_open = np.frombuffer(bytes(grid.open), dtype=np.uint8).astype(bool).reshape(grid.rows, grid.cols)
        self.exit_cells = list(scenario.exit_cells)
        is_exit = np.zeros(grid.size, dtype=bool)
        is_exit[self.exit_cells] = True
        self.is_exit = is_exit.reshape(grid.rows, grid.cols)
        self.standing = is_open & ~self.is_exit
        self.starts = list(scenario.start_cells)
        self.starts_mask = np.zeros(grid.size, dtype=bool)
        self.starts_mask[self.starts] = True
        self.max_steps = scenario.max_steps
        self.grid = grid
        # Each exit's in-bounds 4-neighbours: where a person enters it from.
        self.exit_neighbours = [[n for _, n in grid.neighbours(e)] for e in self.exit_cells]

    def exit_distance(self):
        """Each cell's number of moves to the nearest exit through open cells, fire aside (int64; 2^30 where
        none): a person starting on c enters an exit at step >= that number."""
        grid = self.grid
        distance = [2**30] * grid.size
        lower_distances(distance, self.exit_cells, grid.cols, grid.size, grid.open)
        return np.asarray(distance, dtype=np.int64)

    def alive(self, t):
        """The cells a person may stand on at the end of step t: standing cells with b(c) > t."""
        return self.standing & (self.ignite > t)

    def exit_reach(self, t, taken=None):
        """The cells next to an exit usable at step t (b(e) > t - 1), but for the exits of ``taken`` (cells)."""
        usable = self.is_exit & (self.ignite > t - 1)
        return dilate(usable if taken is None else usable & ~taken)


class Taken:
    """The vertices of G_T that paths already hold (``cells[t]``, a boolean array per step) and the exit
    vertices they enter (``exits[k, t]`` for [e_k, t]): a network made with them leaves them out."""

    def __init__(self, floor, horizon, paths):
        self.cells = np.zeros((horizon + 1, floor.size), dtype=bool)
        self.exits = np.zeros((len(floor.exit_cells), horizon + 2), dtype=bool)
        self.exit_cells = np.zeros((horizon + 2, floor.size), dtype=bool)
        for cells, exit_index in paths:
            self.cells[np.arange(len(cells)), cells] = True
            if exit_index is not None:
                self.exits[exit_index, len(cells)] = True
                self.exit_cells[len(cells), floor.exit_cells[exit_index]] = True
        self.cells = self.cells.reshape(horizon + 1, floor.rows, floor.cols)
        self.exit_cells = self.exit_cells.reshape(horizon + 2, floor.rows, floor.cols)


def back_layers(floor, horizon, final=None, taken=None):
    """The cells of G_T (T = ``horizon``) that can still reach the sink, layer by layer from step T down to 0
    (sink arcs at step T from the cells of ``final``, a boolean array, or None for none; without the
    vertices ``taken`` holds)."""

    def alive(t):
        return floor.alive(t) if taken is None else floor.alive(t) & ~taken.cells[t]

    def exit_reach(t):
        return floor.exit_reach(t) if taken is None else floor.exit_reach(t, taken.exit_cells[t])

    back = alive(horizon) & final if final is not None else np.zeros((floor.rows, floor.cols), dtype=bool)
    yield back
    for t in range(horizon - 1, -1, -1):
        back = alive(t) & (dilate(back) | exit_reach(t + 1))
        yield back


class Reach:
    """What one person alone can do in G_T (T = ``horizon``, sink arcs at T from ``final``): ``back[t]``, the
    cells it can still reach the sink from at step t; ``starts``, the people (indices into the floor's
    start cells) who reach it; ``upto[t]``, the vertices G_T keeps at steps 0..t.

    No flow of G_T exceeds ``len(starts)``, since every unit starts on one of them; and G_t with sink arcs
    at step t from ``back[t]`` is G_T cut at step t, so its flow is a ceiling of G_T's too.
    """

    def __init__(self, floor, horizon, final=None):
        self.horizon = horizon
        self.back = np.empty((horizon + 1, floor.rows, floor.cols), dtype=bool)
        for t, back in zip(range(horizon, -1, -1), back_layers(floor, horizon, final)):
            self.back[t] = back
        self.starts = np.flatnonzero(self.back[0].ravel()[floor.starts])
        counts = np.empty(horizon + 1, dtype=np.int64)
        reach = self.back[0] & floor.starts_mask.reshape(floor.rows, floor.cols)
        for t in range(horizon + 1):
            if t:
                reach = self.back[t] & dilate(reach)
            counts[t] = np.count_nonzero(reach)
        self.upto = np.cumsum(counts)
        self.vertices = int(self.upto[-1])


class Network:
    """G_T (``horizon`` T) with, at step T, an arc to the sink from each vertex on a cell of ``final``
    (a boolean array over the floor, or None for none)."""

    def __init__(self, floor, horizon, final=None, starts=None, taken=None):
        self.floor, self.horizon, self.taken = floor, horizon, taken
        rows, cols = floor.rows, floor.cols
        self.starts = floor.starts if starts is None else starts
        start = np.zeros(floor.size, dtype=bool)
        start[self.starts] = True
        start = start.reshape(rows, cols)
        # Backward: what can still reach the sink; forward: what a person can reach by step t.
        kept = np.empty((horizon + 1, rows, cols), dtype=bool)
        for t, back in zip(range(horizon, -1, -1), back_layers(floor, horizon, final, taken)):
            kept[t] = back
        reach = start
        for t in range(horizon + 1):
            reach = kept[t] & (reach if t == 0 else dilate(reach))
            kept[t] = reach
        self.where = np.flatnonzero(kept)  # vertex v is the flat (t * size + cell) where[v]
        if kept.size < 2**31:
            self.where = self.where.astype(np.int32)
        vertices = self.vertices = len(self.where)
        exits = len(floor.exit_cells)
        self.exit_base = 2 * vertices
        self.source = 2 * vertices + exits * horizon
        self.sink = self.source + 1
        self.nodes = self.sink + 1
        vid = self.vid = np.full(kept.shape, -1, dtype=np.int32)
        vid.flat[self.where] = np.arange(vertices, dtype=np.int32)
        del kept
        first = vid[0].ravel()[self.starts]
        self.first = first[first >= 0]
        self.final = final is not None

    def arcs(self):
        """The arcs as pairs of int32 arrays (tails, heads), a group at a time, made from the vertex ids at
        each call: on a large floor the whole list would outweigh the ids many times."""
        floor, horizon, vid = self.floor, self.horizon, self.vid
        rows, cols, size = floor.rows, floor.cols, floor.size
        for low in range(0, self.vertices, CHUNK):
            block = np.arange(low, min(low + CHUNK, self.vertices), dtype=np.int32)
            yield 2 * block, 2 * block + 1  # in -> out: one person per cell and step
        yield np.full(len(self.first), self.source, dtype=np.int32), 2 * self.first
        layers = max(1, CHUNK // size)
        for t0 in range(0, horizon, layers):
            t1 = min(horizon, t0 + layers)
            for dr, dc in MOVES:
                # (c, t-1) -> (c + (dr, dc), t), over a block of steps at once.
                r0, r1 = max(0, -dr), rows - max(0, dr)
                c0, c1 = max(0, -dc), cols - max(0, dc)
                origin = vid[t0:t1, r0:r1, c0:c1]
                target = vid[t0 + 1 : t1 + 1, r0 + dr : r1 + dr, c0 + dc : c1 + dc]
                both = (origin >= 0) & (target >= 0)
                yield 2 * origin[both] + 1, 2 * target[both]
        flat = vid.reshape(horizon + 1, size)
        for k, (exit_cell, around) in enumerate(zip(floor.exit_cells, floor.exit_neighbours)):
            usable = min(horizon, int(floor.ignite.flat[exit_cell]))  # [e, t] for t = 1..usable: b(e) > t - 1
            if usable < 1:
                continue
            steps = np.arange(1, usable + 1, dtype=np.int32)
            if self.taken is not None:
                steps = steps[~self.taken.exits[k, steps]]
            node = (self.exit_base + k * horizon + steps - 1).astype(np.int32)
            for cell in around:
                origin = flat[steps - 1, cell]
                used = origin >= 0
                yield 2 * origin[used] + 1, node[used]
            yield node, np.full(len(node), self.sink, dtype=np.int32)
        if self.final:
            last = flat[horizon][flat[horizon] >= 0]
            yield 2 * last + 1, np.full(len(last), self.sink, dtype=np.int32)

    def same(self, other):
        """Whether ``other`` is the same network: the same horizon, vertices and sink arcs at step T (an arc
        from every vertex kept at T, or none), so the same flow."""
        return (
            self.horizon == other.horizon
            and self.final == other.final
            and self.taken is None
            and other.taken is None
            and np.array_equal(self.starts, other.starts)
            and np.array_equal(self.where, other.where)
        )

    def vertex(self, node):
        """(t, cell) of an in- or out-node."""
        t, cell = divmod(int(self.where[node // 2]), self.floor.size)
        return t, cell

    def solve(self, paths=False):
        """The maximum flow's value; with ``paths``, also each unit's path (``Network.paths``)."""
        value, flow = maximum_flow(self.nodes, self.arcs, self.source, self.sink, paths)
        if not paths:
            return value, None
        return value, self.paths(flow)

    def paths(self, flow):
        """The units of a flow (pairs of node arrays: the arcs carrying one unit) as paths.

        Each path is ``(cells, exit)``: the cells at steps 0..k of one person
        (from its start) and the index of the exit it enters at step k + 1,
        or None for a path that ends in the sink at step T (alive there).
        Vertex capacities 1 make every node's outgoing unit unique.
        """
        tails, heads = flow
        follow = dict(zip(tails.tolist(), heads.tolist()))
        starts = [head for tail, head in zip(tails.tolist(), heads.tolist()) if tail == self.source]
        result = []
        for node in sorted(starts):
            cells = []
            exit_index = None
            while True:
                t, cell = self.vertex(node)
                if t != len(cells):
                    raise RuntimeError(f"bounds: a flow path skips from step {len(cells) - 1} to step {t}")
                cells.append(cell)
                out = follow[node]
                if out != node + 1:
                    raise RuntimeError(f"bounds: the flow leaves in-node {node} other than through its vertex")
                nxt = follow[out]
                if nxt == self.sink:
                    break
                if nxt >= self.exit_base:
                    exit_index = (nxt - self.exit_base) // self.horizon
                    if (nxt - self.exit_base) % self.horizon + 1 != len(cells):
                        raise RuntimeError("bounds: a flow path enters an exit at the wrong step")
                    break
                node = nxt
            result.append((cells, exit_index))
        return result
