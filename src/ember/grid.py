"""Grid geometry shared by the simulator, the checks and the metrics.

A cell is the integer ``row * cols + col``: flat indexes make the per-step
work list and bytearray lookups instead of tuple hashing.
"""

from array import array
from collections import deque
from heapq import heappop, heappush

DIRECTIONS = ("north", "south", "west", "east")
DELTAS = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
UNREACHABLE = -1


class Grid:
    def __init__(self, rows, cols, walls):
        self.rows = rows
        self.cols = cols
        self.size = rows * cols
        self.open = bytearray(b"\x01") * self.size  # 1 where there is no wall
        for cell in walls:
            self.open[cell] = 0
        self.walls = frozenset(walls)

    def cell(self, index):
        """The ``[row, col]`` list of a flat index."""
        return [index // self.cols, index % self.cols]

    def index(self, row, col):
        return row * self.cols + col

    def in_bounds(self, row, col):
        return 0 <= row < self.rows and 0 <= col < self.cols

    def neighbours(self, index):
        """In-bounds 4-neighbours as (direction, index), in the order N, S, W, E."""
        cols = self.cols
        result = []
        if index >= cols:
            result.append(("north", index - cols))
        if index + cols < self.size:
            result.append(("south", index + cols))
        col = index % cols
        if col:
            result.append(("west", index - 1))
        if col + 1 < cols:
            result.append(("east", index + 1))
        return result

    def distances(self, sources, passable):
        """4-neighbour BFS distance from the nearest source through passable cells.

        ``passable`` is a bytearray (1 = may be crossed); sources that are
        not passable are skipped.  Unreached cells hold ``UNREACHABLE``.
        """
        dist = array("i", [UNREACHABLE]) * self.size
        frontier = [s for s in sources if passable[s]]
        for s in frontier:
            dist[s] = 0
        cols, size = self.cols, self.size
        d = 0
        while frontier:
            d += 1
            nxt = []
            for i in frontier:
                col = i % cols
                for j in (
                    i - cols if i >= cols else -1,
                    i + cols if i + cols < size else -1,
                    i - 1 if col else -1,
                    i + 1 if col + 1 < cols else -1,
                ):
                    if j >= 0 and passable[j] and dist[j] == UNREACHABLE:
                        dist[j] = d
                        nxt.append(j)
            frontier = nxt
        return dist

    def reachable(self, sources, passable):
        """bytearray: 1 for cells connected to a passable source through passable cells."""
        seen = bytearray(self.size)
        stack = [s for s in sources if passable[s]]
        for s in stack:
            seen[s] = 1
        cols, size = self.cols, self.size
        while stack:
            i = stack.pop()
            col = i % cols
            for j in (
                i - cols if i >= cols else -1,
                i + cols if i + cols < size else -1,
                i - 1 if col else -1,
                i + 1 if col + 1 < cols else -1,
            ):
                if j >= 0 and passable[j] and not seen[j]:
                    seen[j] = 1
                    stack.append(j)
        return seen



def _component_array(count, size):
    """A zeroed per-cell array able to hold component ids ``0 .. count - 1``."""
    if count <= 0xFF:
        return array("B", bytes(size))
    if count <= 0xFFFF:
        return array("H", [0]) * size
    return array("i", [0]) * size


class ExitReachability:
    """Which cells still connect to a usable exit (simulator.md §3 rule 6).

    ``reach[cell]`` is 1 exactly for the cells joined to a usable exit (an
    exit cell that is not burning) through passable cells (in bounds, not a
    wall, not burning): after every ``ignite`` it equals
    ``grid.reachable(usable exits, passable)``.

    Burning only grows, so the region only shrinks: every ignition is one
    cell deletion.  The region is kept as connected components, each with a
    label and its number of usable exits.  Deleting a cell x of component c
    can only split c into the pieces holding x's neighbours; the pieces are
    found by searching from those neighbours in lockstep (one expansion per
    search in turn), merging searches that meet, until one search group is
    left.  Each group that runs dry first is a whole piece: it is cleared
    when it holds no usable exit and relabelled otherwise, and the rest
    keeps c.  A component left without a usable exit is cleared.  The cost
    of a deletion is therefore bounded by (number of searches) x (size of
    the pieces that split off) plus the cells that lose reach, never by the
    grid size; a cell outside the region costs O(1).
    """

    def __init__(self, grid, exit_cells, burning_cells):
        self.grid = grid
        self.exit_cells = list(exit_cells)
        size = grid.size
        self.passable = passable = bytearray(grid.open)
        for cell in burning_cells:
            passable[cell] = 0
        self._is_exit = is_exit = bytearray(size)
        for cell in self.exit_cells:
            is_exit[cell] = 1
        self.reach = bytearray(size)
        # At most one live component per usable exit, plus the one being cut.
        self._label = _component_array(len(self.exit_cells) + 1, size)
        self._exits = []  # component id -> its number of usable exits
        self._free = []  # ids of components that died
        for cell in self.exit_cells:
            if passable[cell] and not self.reach[cell]:
                cid = len(self._exits)
                self._exits.append(0)
                self._exits[cid] = self._flood(cell, cid)

    def ignite(self, cells):
        """Mark ``cells`` burning (this step's ignitions, in any order)."""
        passable, reach = self.passable, self.reach
        for cell in cells:
            if reach[cell]:
                self._cut(cell)
            passable[cell] = 0

    # -- internals ----------------------------------------------------------

    def _flood(self, start, cid):
        """Give reach and label ``cid`` to the passable cells joined to ``start``; count exits."""
        passable, reach, label, is_exit = self.passable, self.reach, self._label, self._is_exit
        cols, size = self.grid.cols, self.grid.size
        reach[start] = 1
        label[start] = cid
        exits = is_exit[start]
        stack = [start]
        while stack:
            i = stack.pop()
            col = i % cols
            for j in (
                i - cols if i >= cols else -1,
                i + cols if i + cols < size else -1,
                i - 1 if col else -1,
                i + 1 if col + 1 < cols else -1,
            ):
                if j >= 0 and passable[j] and not reach[j]:
                    reach[j] = 1
                    label[j] = cid
                    exits += is_exit[j]
                    stack.append(j)
        return exits

    def _clear(self, start):
        """Clear reach for the component holding ``start``."""
        reach = self.reach
        cols, size = self.grid.cols, self.grid.size
        reach[start] = 0
        stack = [start]
        while stack:
            i = stack.pop()
            col = i % cols
            for j in (
                i - cols if i >= cols else -1,
                i + cols if i + cols < size else -1,
                i - 1 if col else -1,
                i + 1 if col + 1 < cols else -1,
            ):
                if j >= 0 and reach[j]:
                    reach[j] = 0
                    stack.append(j)

    def _cut(self, x):
        """Delete cell ``x`` (in the region) from its component."""
        reach, exits = self.reach, self._exits
        cols, size = self.grid.cols, self.grid.size
        reach[x] = 0
        cid = self._label[x]
        if self._is_exit[x]:
            exits[cid] -= 1
        col = x % cols
        has_north, has_south = x >= cols, x + cols < size
        has_west, has_east = col > 0, col + 1 < cols
        # Neighbours in ring order N, E, S, W, and the diagonal between each and the next.
        ring = (
            x - cols if has_north and reach[x - cols] else -1,
            x + 1 if has_east and reach[x + 1] else -1,
            x + cols if has_south and reach[x + cols] else -1,
            x - 1 if has_west and reach[x - 1] else -1,
        )
        seeds = [i for i in range(4) if ring[i] >= 0]
        if len(seeds) >= 2:
            diagonal = (
                has_north and has_east and reach[x - cols + 1],
                has_south and has_east and reach[x + cols + 1],
                has_south and has_west and reach[x + cols - 1],
                has_north and has_west and reach[x - cols - 1],
            )
            rest = self._split(cid, ring, diagonal, seeds)
        elif seeds:
            rest = ring[seeds[0]]
        else:
            rest = -1
        if exits[cid] == 0:
            if rest >= 0:
                self._clear(rest)
            self._free.append(cid)

    def _split(self, cid, ring, diagonal, seeds):
        """Separate the pieces of component ``cid`` left by a deletion; return a cell of the rest.

        ``ring`` holds the deleted cell's neighbours in the region (N, E, S,
        W; -1 for none), ``diagonal[i]`` whether the cell between ring[i]
        and ring[i + 1] is in the region (which joins them at once).
        """
        parent = [0, 1, 2, 3]

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        for i in range(4):
            j = (i + 1) & 3
            if diagonal[i] and ring[i] >= 0 and ring[j] >= 0:
                parent[find(j)] = find(i)
        roots = {find(i) for i in seeds}
        if len(roots) == 1:
            return ring[seeds[0]]

        reach, label, exits, is_exit = self.reach, self._label, self._exits, self._is_exit
        cols, size = self.grid.cols, self.grid.size
        seen = {}  # explored cell -> id of the search that found it
        queue = {g: deque() for g in roots}
        for i in seeds:
            cell = ring[i]
            seen[cell] = i
            queue[find(i)].append(cell)
        active = sorted(roots)
        k = 0
        while len(active) > 1:
            if k >= len(active):
                k = 0
            g = active[k]
            q = queue[g]
            if not q:
                # Group g ran dry: what it explored is a whole piece of the cut component.
                piece = [cell for cell, s in seen.items() if find(s) == g]
                count = 0
                for cell in piece:
                    count += is_exit[cell]
                if count:
                    if self._free:
                        new = self._free.pop()
                        exits[new] = count
                    else:
                        new = len(exits)
                        exits.append(count)
                    for cell in piece:
                        label[cell] = new
                    exits[cid] -= count
                else:
                    for cell in piece:
                        reach[cell] = 0
                del active[k]
                continue
            i = q.popleft()
            col = i % cols
            for j in (
                i - cols if i >= cols else -1,
                i + cols if i + cols < size else -1,
                i - 1 if col else -1,
                i + 1 if col + 1 < cols else -1,
            ):
                if j < 0 or not reach[j]:
                    continue
                s = seen.get(j)
                if s is None:
                    seen[j] = g
                    q.append(j)
                    continue
                r = find(s)
                if r != g:
                    # Two searches met: they explore one piece.
                    parent[r] = g
                    q.extend(queue.pop(r))
                    at = active.index(r)
                    del active[at]
                    if at < k:
                        k -= 1
                    if len(active) == 1:
                        break
            k += 1
        rest = active[0]
        return next(ring[i] for i in seeds if find(i) == rest)


class ExitDistances:
    """The greedy policy's distance field (simulator.md §4), kept under deletions.

    ``dist[cell]`` equals ``grid.distances(exit_cells, passable)`` after
    every ``burn``: the 4-neighbour distance to the nearest usable exit
    through passable cells, ``UNREACHABLE`` where there is none (and on
    impassable cells).

    Cells only ever become impassable, so distances only grow.  ``burn``
    finds the cells whose distance grows (in order of old distance, a cell
    keeps its distance iff a neighbour keeps distance one less; exits that
    still stand are sources), and recomputes only those with a bucket queue
    seeded from their unchanged neighbours.  The cost is proportional to the
    cells whose distance changes and their neighbours.
    """

    INVALID = -2

    def __init__(self, grid, exit_cells, burning_cells=()):
        self.grid = grid
        self.exit_cells = list(exit_cells)
        self.passable = passable = bytearray(grid.open)
        for cell in burning_cells:
            passable[cell] = 0
        self.dist = grid.distances(self.exit_cells, passable)

    def burn(self, cells):
        """Make ``cells`` impassable (any order; cells already impassable are ignored)."""
        passable, dist = self.passable, self.dist
        cols, size = self.grid.cols, self.grid.size
        invalid_mark = self.INVALID
        buckets, keys = {}, []

        # Children (old distance + 1) of the deleted cells may lose their distance.
        for x in cells:
            if not passable[x]:
                continue
            passable[x] = 0
            d = dist[x]
            dist[x] = UNREACHABLE
            if d == UNREACHABLE:
                continue
            d += 1
            col = x % cols
            for j in (
                x - cols if x >= cols else -1,
                x + cols if x + cols < size else -1,
                x - 1 if col else -1,
                x + 1 if col + 1 < cols else -1,
            ):
                if j >= 0 and dist[j] == d:
                    bucket = buckets.get(d)
                    if bucket is None:
                        buckets[d] = bucket = []
                        heappush(keys, d)
                    bucket.append(j)
        if not keys:
            return

        # 1. In order of old distance d: a candidate keeps d iff a neighbour
        #    still holds d - 1 (invalid cells hold INVALID, impassable ones
        #    UNREACHABLE, so neither matches); else its children are candidates.
        invalid = []
        while keys:
            d = heappop(keys)
            below, above = d - 1, d + 1
            for v in buckets.pop(d):
                if dist[v] != d:
                    continue  # seen already, or deleted in this batch
                col = v % cols
                north = v - cols if v >= cols else -1
                south = v + cols if v + cols < size else -1
                west = v - 1 if col else -1
                east = v + 1 if col + 1 < cols else -1
                if (
                    (north >= 0 and dist[north] == below)
                    or (south >= 0 and dist[south] == below)
                    or (west >= 0 and dist[west] == below)
                    or (east >= 0 and dist[east] == below)
                ):
                    continue
                dist[v] = invalid_mark
                invalid.append(v)
                for j in (north, south, west, east):
                    if j >= 0 and dist[j] == above:
                        bucket = buckets.get(above)
                        if bucket is None:
                            buckets[above] = bucket = []
                            heappush(keys, above)
                        bucket.append(j)
        if not invalid:
            return

        # 2. Recompute the invalid cells from their valid neighbours, nearest first.
        for v in invalid:
            best = -1
            col = v % cols
            for j in (
                v - cols if v >= cols else -1,
                v + cols if v + cols < size else -1,
                v - 1 if col else -1,
                v + 1 if col + 1 < cols else -1,
            ):
                if j >= 0:
                    dj = dist[j]
                    if dj >= 0 and (best < 0 or dj < best):
                        best = dj
            if best >= 0:
                best += 1
                bucket = buckets.get(best)
                if bucket is None:
                    buckets[best] = bucket = []
                    heappush(keys, best)
                bucket.append(v)
        while keys:
            d = heappop(keys)
            above = d + 1
            for v in buckets.pop(d):
                if dist[v] != invalid_mark:
                    continue
                dist[v] = d
                col = v % cols
                for j in (
                    v - cols if v >= cols else -1,
                    v + cols if v + cols < size else -1,
                    v - 1 if col else -1,
                    v + 1 if col + 1 < cols else -1,
                ):
                    if j >= 0 and dist[j] == invalid_mark:
                        bucket = buckets.get(above)
                        if bucket is None:
                            buckets[above] = bucket = []
                            heappush(keys, above)
                        bucket.append(j)
        for v in invalid:
            if dist[v] == invalid_mark:
                dist[v] = UNREACHABLE
