"""Grid geometry shared by the simulator, the checks and the metrics.

A cell is the integer ``row * cols + col``: flat indexes make the per-step
work list and bytearray lookups instead of tuple hashing.
"""

import functools
from array import array
from collections import deque
from heapq import heappop, heappush

DIRECTIONS = ("north", "south", "west", "east")
DELTAS = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
UNREACHABLE = -1
FAR = 2**31 - 1  # a distance larger than any on a grid


def around(i, cols, size):
    """Cell ``i``'s 4-neighbours (north, south, west, east), -1 where off the grid."""
    col = i % cols
    return (
        i - cols if i >= cols else -1,
        i + cols if i + cols < size else -1,
        i - 1 if col else -1,
        i + 1 if col + 1 < cols else -1,
    )


#: Grids up to this many cells get a neighbour table (about 100 bytes a cell), kept
#: for repeated searches on small grids; larger ones write their neighbours out.
NEIGHBOUR_TABLE_MAX_CELLS = 1 << 12


@functools.lru_cache(maxsize=4)
def neighbour_table(cols, size):
    """Every cell's in-grid 4-neighbours (a tuple per cell), built once per grid shape.

    The distance updates of small grids run on every step: looking
    neighbours up costs less than working them out for each cell visited.
    """
    return tuple(tuple(j for j in around(i, cols, size) if j >= 0) for i in range(size))


@functools.lru_cache(maxsize=4)
def _everywhere(size):
    return b"\x01" * size


def lower_distances(dist, sources, cols, size, passable=None):
    """Breadth-first from ``sources``: lower each ``dist[j]`` to j's 4-neighbour distance from them.

    A cell keeps its value where that is not larger, so cells no BFS has
    reached must hold more than any distance (``FAR``).  With ``passable``
    (a bytearray, 1 = may be crossed) other cells are neither sources nor
    crossed; without it, walls are crossed too.
    """
    if passable is None:
        passable = _everywhere(size)
    frontier = []
    for cell in sources:
        if dist[cell] and passable[cell]:
            dist[cell] = 0
            frontier.append(cell)
    d = 0
    if size <= NEIGHBOUR_TABLE_MAX_CELLS:
        neighbours = neighbour_table(cols, size)
        while frontier:
            d += 1
            nxt = []
            append = nxt.append
            for i in frontier:
                for j in neighbours[i]:
                    if dist[j] > d and passable[j]:
                        dist[j] = d
                        append(j)
            frontier = nxt
        return
    while frontier:
        d += 1
        nxt = []
        append = nxt.append
        for i in frontier:
            col = i % cols
            if i >= cols:
                j = i - cols
                if dist[j] > d and passable[j]:
                    dist[j] = d
                    append(j)
            j = i + cols
            if j < size and dist[j] > d and passable[j]:
                dist[j] = d
                append(j)
            if col:
                j = i - 1
                if dist[j] > d and passable[j]:
                    dist[j] = d
                    append(j)
            if col + 1 < cols:
                j = i + 1
                if dist[j] > d and passable[j]:
                    dist[j] = d
                    append(j)
        frontier = nxt


class ManhattanField:
    """Each cell's Manhattan distance to the nearest burning cell, walls ignored (metrics.md §8), by numpy.

    ``ignite(cells)`` adds burning cells; ``distances()`` is the field as a
    flat integer array (cell index -> distance), valid once a cell burns.

    The distance transform is separable: first along each row (the nearest
    burning column to the left and to the right, by running maximum and
    minimum), then along each column, min over r' of h[r'] + |r - r'|.
    The row pass is redone only for the rows that have new burning cells.
    The column pass doubles: after the rounds for s = 1, 2, 4, ... every
    value is min(h[r'] + |r - r'|) over |r - r'| < 2s (a round takes
    min(d[r], d[r - s] + s) and then min(d[r], d[r + s] + s); every value
    is h[r'] plus the length of some path, so never below the true
    minimum, and an offset between s and 2s is s plus one below s), so
    log2(rows) rounds of whole-grid operations, which numpy runs several
    times faster than a running minimum down the columns.  Integers only
    (int16 where the distances fit): exact, whatever the platform.
    """

    def __init__(self, rows, cols):
        import numpy as np  # a core dependency, imported only where it pays (large grids)

        self.np = np
        self.rows, self.cols = rows, cols
        self.far = far = rows + cols  # beyond any distance on the grid
        self.dtype = dtype = np.int16 if 4 * far < 2**15 else np.int32  # values stay below 3 * far + rows
        self.mask = np.zeros((rows, cols), dtype=bool)
        self.flat_mask = self.mask.reshape(-1)  # a view: cell index -> mask entry
        self.col = np.arange(cols, dtype=dtype)
        self.along_row = np.full((rows, cols), 3 * far, dtype=dtype)  # distance within the row; 3 far: no fire there
        self.field = None  # the last distances(), until the next ignite

    def ignite(self, cells):
        np = self.np
        cols = self.cols
        self.flat_mask[np.asarray(cells, dtype=np.intp)] = True
        # The rows with new fire, in order: a set of a step's few ignitions costs less than
        # np.unique, whose first call alone takes about 15 ms.
        rows = np.array(sorted({cell // cols for cell in cells}), dtype=np.intp)
        burning = self.mask[rows]
        col, far = self.col, self.far
        left = np.where(burning, col, -far).astype(self.dtype, copy=False)
        np.maximum.accumulate(left, axis=1, out=left)  # the nearest burning column at or before each
        right = np.where(burning, col, self.cols + far).astype(self.dtype, copy=False)[:, ::-1]
        right = np.minimum.accumulate(right, axis=1)[:, ::-1]  # ... at or after each
        np.subtract(col, left, out=left)
        right -= col
        np.minimum(left, right, out=left)
        self.along_row[rows] = left
        self.field = None

    def distances(self):
        if self.field is None:
            np, rows = self.np, self.rows
            field = self.along_row.copy()
            s = 1
            while s < rows:
                np.minimum(field[s:], field[:-s] + s, out=field[s:])  # from s rows up
                np.minimum(field[:-s], field[s:] + s, out=field[:-s])  # from s rows down
                s *= 2
            self.field = field.reshape(-1)
        return self.field


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
        dist = array("i", [FAR]) * self.size
        lower_distances(dist, sources, self.cols, self.size, passable)
        for cell in range(self.size):
            if dist[cell] == FAR:
                dist[cell] = UNREACHABLE
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
            for j in around(i, cols, size):
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


def obstacle_arcs(pattern):
    """The obstacle arcs round a cell being deleted (``ExitReachability._cut``), from its ring pattern.

    Bit i of ``pattern`` (i = 0..3: N, E, S, W) is a passable 4-neighbour,
    bit 4 + i a passable diagonal after it (NE, SE, SW, NW).  Between two
    consecutive passable 4-neighbours the arc is open when they are
    adjacent and the diagonal between them is passable; every other gap is
    an obstacle arc.  The same walk as ``_cut``'s, counting only.
    """
    seeds = [i for i in range(4) if pattern >> i & 1]
    arcs = 0
    for at, i in enumerate(seeds):
        j = seeds[(at + 1) % len(seeds)]
        if not (j == (i + 1) & 3 and pattern >> (4 + i) & 1):
            arcs += 1
    return arcs


#: 1 for each ring pattern with two or more passable 4-neighbours and at most one obstacle arc:
#: deleting the cell cannot split its component (1 + arcs - distinct arcs pieces = 1), whatever
#: the obstacles' components, so ``_cut`` needs no find.  The usual cell on a fire front.
ONE_PIECE = bytes(int(bin(p & 15).count("1") >= 2 and obstacle_arcs(p) <= 1) for p in range(256))


class ExitReachability:
    """Which cells still connect to a usable exit (simulator.md §3 rule 6).

    ``reach[cell]`` is 1 exactly for the cells joined to a usable exit (an
    exit cell that is not burning) through passable cells (in bounds, not a
    wall, not burning): after every ``ignite`` it equals
    ``grid.reachable(usable exits, passable)``.

    Burning only grows, so every ignition deletes one cell from the
    passable set.  The region is kept as connected components, each with a
    label and its number of usable exits.

    Whether deleting x splits its component is decided locally, from the
    dual picture: the obstacles (walls, burning cells and everything out of
    bounds) are kept in a union-find under 8-adjacency, which only ever
    grows.  Going round x's eight neighbours, the passable 4-neighbours form
    ``r`` runs separated by ``r`` obstacle arcs; if those arcs belong to
    ``g`` distinct obstacle components, adding x to the obstacles closes
    ``r - g`` new loops, and (Euler characteristic of the (8, 4) digital
    plane) the component of x falls into exactly ``1 + r - g`` pieces.  So
    the usual deletion costs O(1).  When it splits, searches from the runs
    go in lockstep (one expansion each in turn, merging searches that meet)
    until ``r - g`` of them have run dry: each of those explored a whole
    piece, which is cleared when it holds no usable exit and relabelled
    otherwise; the rest keeps the label.  A component left without a usable
    exit is cleared.  The cost of a split is bounded by (number of runs) x
    (size of the pieces that split off), never by the grid size.
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
        unreached = bytearray(passable)  # passable cells no flood has reached yet
        for cell in self.exit_cells:
            if unreached[cell]:
                cid = len(self._exits)
                self._exits.append(0)
                self._exits[cid] = self._flood(cell, cid, unreached)
        # Obstacle union-find: a root holds -(its size); index ``size`` is the
        # outside of the grid, one 8-connected obstacle round the border.
        self._outside = outside = size
        self._parent = array("i", [-1]) * (size + 1)
        union, cols = self._union, grid.cols
        last_row = size - cols
        cell = passable.find(0)
        while cell >= 0:
            # Scanning in index order, joining each obstacle to the ones
            # before it (W, NW, N, NE) covers every 8-adjacent pair.
            col = cell % cols
            if cell < cols or cell >= last_row or col == 0 or col + 1 == cols:
                union(cell, outside)
            if col and not passable[cell - 1]:
                union(cell, cell - 1)
            if cell >= cols:
                up = cell - cols
                if not passable[up]:
                    union(cell, up)
                if col and not passable[up - 1]:
                    union(cell, up - 1)
                if col + 1 < cols and not passable[up + 1]:
                    union(cell, up + 1)
            cell = passable.find(0, cell + 1)

    def ignite(self, cells):
        """Mark ``cells`` burning (this step's ignitions, in any order)."""
        passable, reach = self.passable, self.reach
        for cell in cells:
            if not passable[cell]:
                continue  # already an obstacle: nothing changes
            if reach[cell]:
                self._cut(cell)
            passable[cell] = 0
            self._add_obstacle(cell)

    # -- internals ----------------------------------------------------------

    def _find(self, a):
        parent = self._parent
        while parent[a] >= 0:
            b = parent[a]
            c = parent[b]
            if c < 0:
                return b
            parent[a] = c  # path halving
            a = c
        return a

    def _union(self, a, b):
        a, b = self._find(a), self._find(b)
        if a != b:
            parent = self._parent
            if parent[a] > parent[b]:  # b is the larger tree
                a, b = b, a
            parent[a] += parent[b]
            parent[b] = a

    def _add_obstacle(self, x):
        """Join obstacle ``x`` (new: a tree of its own) to its 8-neighbour obstacles, and to the
        outside on the border.  One call per ignition: the finds and links are written out."""
        passable, parent = self.passable, self._parent
        cols, size = self.grid.cols, self.grid.size
        col = x % cols
        if x >= cols and x + cols < size and col and col + 1 < cols:
            up, down = x - cols, x + cols
            neighbours = (up - 1, up, up + 1, x - 1, x + 1, down - 1, down, down + 1)
            border = False
        else:
            neighbours = [
                n + dc
                for n in (x - cols, x, x + cols)
                if 0 <= n < size
                for dc in (-1, 0, 1)
                if 0 <= col + dc < cols and n + dc != x
            ]
            border = True
        root = x
        for n in neighbours:
            if passable[n]:
                continue
            while parent[n] >= 0:  # find n's root, halving the path
                up = parent[n]
                top = parent[up]
                if top < 0:
                    n = up
                    break
                parent[n] = top
                n = top
            if n != root:
                if parent[root] > parent[n]:  # n's tree is the larger: it takes root's
                    root, n = n, root
                parent[root] += parent[n]
                parent[n] = root
        if border:
            self._union(root, self._outside)

    def _flood(self, start, cid, unreached):
        """Give reach and label ``cid`` to the cells of ``unreached`` (a mask, cleared as they are
        reached) joined to ``start``; count the exits among them.

        Run by run (a scanline fill): a popped cell's whole run of
        unreached cells in its row is found, marked and labelled by bytes
        searches and slice assignments, and each run of unreached cells
        beside it in the rows above and below gives one seed.  The first
        flood covers the whole floor, tens of thousands of cells on a large
        one: C-speed work per run instead of Python's per cell.
        """
        reach, label, is_exit = self.reach, self._label, self._is_exit
        cols, size = self.grid.cols, self.grid.size
        one = array(label.typecode, [cid])
        exits = 0
        stack = [start]
        while stack:
            x = stack.pop()
            if not unreached[x]:
                continue  # reached by another run since it was pushed
            row_start = x - x % cols
            a = unreached.rfind(0, row_start, x)
            a = row_start if a < 0 else a + 1
            b = unreached.find(0, x, row_start + cols)
            if b < 0:
                b = row_start + cols
            n = b - a
            unreached[a:b] = bytes(n)
            reach[a:b] = b"\x01" * n
            label[a:b] = one * n
            exits += is_exit.count(1, a, b)
            for side in (a - cols, a + cols):
                if not 0 <= side < size:
                    continue
                end = side + n
                y = unreached.find(1, side, end)
                while y >= 0:
                    stack.append(y)  # one seed per run beside this one
                    z = unreached.find(0, y, end)
                    y = -1 if z < 0 else unreached.find(1, z, end)
        return exits

    def _clear(self, start):
        """Clear reach for the component holding ``start``."""
        reach = self.reach
        cols, size = self.grid.cols, self.grid.size
        reach[start] = 0
        stack = [start]
        while stack:
            i = stack.pop()
            for j in around(i, cols, size):
                if j >= 0 and reach[j]:
                    reach[j] = 0
                    stack.append(j)

    def _cut(self, x):
        """Delete cell ``x`` (in the region, still passable) from its component."""
        reach, passable, exits = self.reach, self.passable, self._exits
        cols, size = self.grid.cols, self.grid.size
        reach[x] = 0
        cid = self._label[x]
        if self._is_exit[x]:
            exits[cid] -= 1
        col = x % cols
        has_north, has_south = x >= cols, x + cols < size
        has_west, has_east = col > 0, col + 1 < cols
        # The 4-neighbours in ring order N, E, S, W (-1: an obstacle, or out
        # of bounds); a passable neighbour of a region cell is in the region.
        ring = (
            x - cols if has_north and passable[x - cols] else -1,
            x + 1 if has_east and passable[x + 1] else -1,
            x + cols if has_south and passable[x + cols] else -1,
            x - 1 if has_west and passable[x - 1] else -1,
        )
        seeds = [i for i in range(4) if ring[i] >= 0]
        if not seeds:
            rest = -1
        elif len(seeds) == 1:
            rest = ring[seeds[0]]
        else:
            # The diagonal after each ring position (NE, SE, SW, NW): the
            # cell, or -1 out of bounds.
            diagonal = (
                x - cols + 1 if has_north and has_east else -1,
                x + cols + 1 if has_south and has_east else -1,
                x + cols - 1 if has_south and has_west else -1,
                x - cols - 1 if has_north and has_west else -1,
            )
            ne, se, sw, nw = diagonal
            pattern = (
                (ring[0] >= 0)
                | (ring[1] >= 0) << 1
                | (ring[2] >= 0) << 2
                | (ring[3] >= 0) << 3
                | (ne >= 0 and passable[ne]) << 4
                | (se >= 0 and passable[se]) << 5
                | (sw >= 0 and passable[sw]) << 6
                | (nw >= 0 and passable[nw]) << 7
            )
            if ONE_PIECE[pattern]:
                rest = ring[seeds[0]]  # one obstacle arc at most: no split, no find
            else:
                rest = self._pieces(x, cid, ring, seeds, diagonal)
        if exits[cid] == 0:
            if rest >= 0:
                self._clear(rest)
            self._free.append(cid)

    def _pieces(self, x, cid, ring, seeds, diagonal):
        """Deleting ``x`` from component ``cid`` with obstacle arcs round it: a cell of the rest.

        The arcs' obstacle components say how many pieces split off (the
        class doc); ``_split`` separates them.
        """
        passable, cols = self.passable, self.grid.cols
        col = x % cols
        has_north, has_south = x >= cols, x + cols < self.grid.size
        has_west, has_east = col > 0, col + 1 < cols
        orthogonal = (
            x - cols if has_north else -1,
            x + 1 if has_east else -1,
            x + cols if has_south else -1,
            x - 1 if has_west else -1,
        )
        outside = self._outside
        # Walk the arcs between consecutive seeds: an arc is open when the
        # seeds are adjacent and the diagonal between them is passable;
        # otherwise it is an obstacle arc, represented by one of its cells.
        run = [0, 1, 2, 3]  # seeds joined through open arcs share a run
        arcs = []  # obstacle component of each obstacle arc
        for at, i in enumerate(seeds):
            j = seeds[(at + 1) % len(seeds)]
            if j == (i + 1) & 3:
                d = diagonal[i]
                if d >= 0 and passable[d]:
                    a, b = run[i], run[j]
                    for at_b in range(4):  # relabel b's run as a's (the ring wraps)
                        if run[at_b] == b:
                            run[at_b] = a
                    continue
                arcs.append(self._find(d if d >= 0 else outside))
            else:
                o = orthogonal[(i + 1) & 3]
                arcs.append(self._find(o if o >= 0 else outside))
        splits = len(arcs) - len(set(arcs))
        if splits == 0:
            rest = ring[seeds[0]]
        else:
            runs = {}
            for i in seeds:
                runs.setdefault(run[i], []).append(ring[i])
            rest = self._split(cid, list(runs.values()), splits)
        return rest

    def _split(self, cid, runs, splits):
        """Separate the ``splits`` pieces that leave component ``cid``; return a cell of the rest.

        ``runs`` lists the seed cells of each search (the deleted cell's
        neighbours, joined when locally connected).  Searches go in
        lockstep; one that runs dry explored a whole piece.  Once ``splits``
        pieces are found, whatever is left is the rest of ``cid``.
        """
        reach, label, exits, is_exit = self.reach, self._label, self._exits, self._is_exit
        cols, size = self.grid.cols, self.grid.size
        n = len(runs)
        parent = list(range(n))

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        seen = {}  # explored cell -> id of the search that found it
        queue = {}
        for g, cells in enumerate(runs):
            queue[g] = deque(cells)
            for cell in cells:
                seen[cell] = g
        active = list(range(n))
        k = 0
        while splits and len(active) > 1:
            if k >= len(active):
                k = 0
            g = active[k]
            q = queue[g]
            if not q:
                # Search g ran dry: what it explored is a whole piece.
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
                splits -= 1
                continue
            i = q.popleft()
            for j in around(i, cols, size):
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
            k += 1
        return runs[active[0]][0]


class ExitDistances:
    """The greedy policy's distance field (simulator.md §4), kept under deletions.

    The field is kept on a padded grid: a border of cells that are never
    passable (a row above, a row below, and one column that ends each row
    and starts the next), so that every cell's four neighbours are
    ``p - width``, ``p + width``, ``p - 1`` and ``p + 1`` with no bounds to
    check.  ``padded(cell)`` is a cell's index there (``padded_index``);
    ``dist[padded(cell)]`` equals ``grid.distances(exit_cells,
    passable)[cell]`` after every ``burn``: the 4-neighbour distance to the
    nearest usable exit through passable cells, ``UNREACHABLE`` where there
    is none, on impassable cells and on the border.  ``distances()`` is the
    field in cell order.

    Cells only ever become impassable, so distances only grow.  ``burn``
    finds the cells whose distance grows (in order of old distance, a cell
    keeps its distance iff a neighbour keeps distance one less; exits that
    still stand are sources), and recomputes only those, nearest first,
    from their unchanged neighbours.  The cost is proportional to the cells
    whose distance changes and their neighbours.
    """

    INVALID = -2

    def __init__(self, grid, exit_cells, burning_cells=()):
        self.grid = grid
        self.exit_cells = list(exit_cells)
        self.width = width = grid.cols + 1
        cols = grid.cols
        # A list, not an array: reading an array entry above 256 makes a new int object.
        self.dist = dist = [UNREACHABLE] * ((grid.rows + 2) * width)
        self.passable = passable = bytearray(len(dist))
        for row in range(grid.rows):
            start = (row + 1) * width
            passable[start : start + cols] = grid.open[row * cols : (row + 1) * cols]
        for cell in burning_cells:
            passable[cell + cell // cols + width] = 0
        # Breadth-first from the usable exits, on the padded grid: no bounds to check.
        frontier = []
        for cell in self.exit_cells:
            x = cell + cell // cols + width
            if passable[x] and dist[x]:
                dist[x] = 0
                frontier.append(x)
        d = 0
        while frontier:
            d += 1
            layer = []
            for v in frontier:
                for j in (v - width, v + width, v - 1, v + 1):
                    if dist[j] == UNREACHABLE and passable[j]:
                        dist[j] = d
                        layer.append(j)
            frontier = layer

    def padded(self, cell):
        """The index of ``cell`` (``row * cols + col``) in ``dist``."""
        return cell + cell // self.grid.cols + self.width

    def distances(self):
        """The field in cell order (a list)."""
        dist, width, cols = self.dist, self.width, self.grid.cols
        field = []
        for row in range(self.grid.rows):
            start = (row + 1) * width
            field += dist[start : start + cols]
        return field

    def burn(self, cells):
        """Make ``cells`` impassable (any order; cells already impassable are ignored).

        Both phases go through distance layers in increasing order: ``seeds``
        holds cells at distances not reached yet, ``layer`` the cells at the
        current one; each cell only ever adds cells one layer up.
        """
        passable, dist, width = self.passable, self.dist, self.width
        cols = self.grid.cols
        invalid_mark = self.INVALID

        # Children (old distance + 1) of the deleted cells may lose their distance.
        seeds = {}
        for x in cells:
            x += x // cols + width
            if not passable[x]:
                continue
            passable[x] = 0
            d = dist[x]
            dist[x] = UNREACHABLE
            if d == UNREACHABLE:
                continue
            d += 1
            for j in (x - width, x + width, x - 1, x + 1):
                if dist[j] == d:
                    seeds.setdefault(d, []).append(j)
        if not seeds:
            return

        # 1. In order of old distance d: a candidate keeps d iff a neighbour
        #    still holds d - 1 (invalid cells hold INVALID, impassable ones and
        #    the border UNREACHABLE, so none matches); else its children are candidates.
        invalid = []
        d = min(seeds)
        layer = seeds.pop(d)
        while True:
            below, above = d - 1, d + 1
            up = seeds.pop(above, [])
            for v in layer:
                if dist[v] != d:
                    continue  # seen already, or deleted in this batch
                north, south = v - width, v + width
                if dist[north] == below or dist[south] == below or dist[v - 1] == below or dist[v + 1] == below:
                    continue
                dist[v] = invalid_mark
                invalid.append(v)
                if dist[north] == above:
                    up.append(north)
                if dist[south] == above:
                    up.append(south)
                if dist[v - 1] == above:
                    up.append(v - 1)
                if dist[v + 1] == above:
                    up.append(v + 1)
            if up:
                d, layer = above, up
            elif seeds:
                d = min(seeds)
                layer = seeds.pop(d)
            else:
                break
        if not invalid:
            return

        # 2. Recompute the invalid cells from their valid neighbours, nearest first.
        for v in invalid:
            # The nearest valid neighbour (invalid and unreachable cells hold negative marks).
            best = FAR
            dj = dist[v - width]
            if dj >= 0:
                best = dj
            dj = dist[v + width]
            if 0 <= dj < best:
                best = dj
            dj = dist[v - 1]
            if 0 <= dj < best:
                best = dj
            dj = dist[v + 1]
            if 0 <= dj < best:
                best = dj
            if best != FAR:
                seeds.setdefault(best + 1, []).append(v)
        if seeds:
            d = min(seeds)
            layer = seeds.pop(d)
            while True:
                up = seeds.pop(d + 1, [])
                for v in layer:
                    if dist[v] != invalid_mark:
                        continue
                    dist[v] = d
                    if dist[v - width] == invalid_mark:
                        up.append(v - width)
                    if dist[v + width] == invalid_mark:
                        up.append(v + width)
                    if dist[v - 1] == invalid_mark:
                        up.append(v - 1)
                    if dist[v + 1] == invalid_mark:
                        up.append(v + 1)
                if up:
                    d, layer = d + 1, up
                elif seeds:
                    d = min(seeds)
                    layer = seeds.pop(d)
                else:
                    break
        for v in invalid:
            if dist[v] == invalid_mark:
                dist[v] = UNREACHABLE


class LazyExitDistances(ExitDistances):
    """An ``ExitDistances`` field repaired only as far as it is read (the planner's door fields).

    ``burn`` does no search: it only notes the cells that may lose their
    distance.  Every value in ``dist`` is a lower bound of the true
    distance, exact up to ``level``:

    * ``UNREACHABLE``: no path (exact; impassable cells and the border too);
    * ``0 <= dist[p] <= level``: the exact distance;
    * ``dist[p] > level``: the distance is at least ``dist[p]``;
    * ``INVALID``: the distance is larger than ``level``.

    So every cell at distance ``level`` or less shows it.  ``settle_to(d)``
    raises ``level`` to ``d`` or more; ``settle(cells)`` raises it until
    every cell of ``cells`` is exact (``exact(p)``), proving a cell
    unreachable only by repairing the whole field; ``settle_all()`` repairs
    everything, after which ``distances()`` is ``ExitDistances``' own.

    The work is the eager ``burn``'s two phases merged into one search,
    level by level (``pending``: level -> cells to look at there, its
    levels in the heap ``levels``; ``level`` is the lowest pending level
    minus one).  A cell v looked at on level k whose value is k keeps it
    iff a neighbour holds k - 1 (exact, as every level below k is done);
    else it turns ``INVALID``, its children (neighbours at k + 1) are
    looked at on level k + 1, and v itself on level d + 1 for each
    neighbour at d.  An ``INVALID`` cell looked at on level k takes k iff
    a neighbour holds k - 1 (every cell nearer than k is exact by then, so
    it is exactly k), and then its ``INVALID`` neighbours are looked at on
    level k + 1; otherwise that entry is stale (its neighbour changed
    since) and is dropped.  A reachable ``INVALID`` cell always has a live
    entry (from its neighbour on a shortest path, when either of them
    last changed), so when nothing is pending the ``INVALID`` cells left
    are unreachable.  A burn deletes cells: their children are looked at
    one level up.

    The planner reads each door's field only where people stand and only
    as far as that door could win them, so cells far from every person
    that the fire pushes further step after step are never repaired.
    """

    def __init__(self, grid, exit_cells, burning_cells=()):
        super().__init__(grid, exit_cells, burning_cells)
        self.pending = {}  # level -> cells to look at on that level
        self.levels = []  # heap of pending's keys
        self.level = FAR  # every cell at this distance or less shows its exact distance
        self.dirty = []  # cells turned INVALID since nothing was last pending (some repaired since)
        self.dirty_limit = len(self.dist)  # compact ``dirty`` beyond this length

    def exact(self, p):
        """True if ``dist[p]`` is ``p``'s exact distance (``UNREACHABLE`` included)."""
        d = self.dist[p]
        return d == UNREACHABLE or 0 <= d <= self.level

    def lower_bound(self, p):
        """A lower bound of ``p``'s distance (``FAR`` if unreachable); exact iff ``exact(p)``."""
        d = self.dist[p]
        if d == UNREACHABLE:
            return FAR
        if d == self.INVALID:
            return self.level + 1
        return d

    def burn(self, cells):
        """Make ``cells`` impassable (any order; cells already impassable are ignored)."""
        passable, dist, width = self.passable, self.dist, self.width
        pending, levels = self.pending, self.levels
        cols = self.grid.cols
        for x in cells:
            x += x // cols + width
            if not passable[x]:
                continue
            passable[x] = 0
            d = dist[x]
            dist[x] = UNREACHABLE
            if d < 0:
                continue  # unreachable, or INVALID: no cell's distance leans on it
            d += 1
            for j in (x - width, x + width, x - 1, x + 1):
                if dist[j] == d:
                    bucket = pending.get(d)
                    if bucket is None:
                        pending[d] = [j]
                        heappush(levels, d)
                    else:
                        bucket.append(j)
        if levels:
            self.level = levels[0] - 1

    def settle_to(self, top):
        """Make every cell at distance ``top`` or less exact (``level >= top``)."""
        levels = self.levels
        if not levels or levels[0] > top:
            return
        pending, dist, width = self.pending, self.dist, self.width
        invalid_mark = self.INVALID
        dirty = self.dirty
        mark = dirty.append
        while levels and levels[0] <= top:
            k = heappop(levels)
            layer = pending.pop(k)
            below, above = k - 1, k + 1
            up = pending.get(above)
            fresh = up is None
            if fresh:
                up = []
            for v in layer:
                d = dist[v]
                if d == k:
                    north, south = v - width, v + width
                    if dist[north] == below or dist[south] == below or dist[v - 1] == below or dist[v + 1] == below:
                        continue  # keeps k
                    dist[v] = invalid_mark
                    mark(v)
                    for j in (north, south, v - 1, v + 1):
                        dj = dist[j]
                        if dj < 0:
                            continue
                        if dj == k:
                            up.append(v)  # v may take k + 1 from j
                            continue
                        if dj == above:
                            up.append(j)  # j may have leant on v
                        dj += 1
                        bucket = pending.get(dj)
                        if bucket is None:
                            pending[dj] = [v]
                            heappush(levels, dj)
                        else:
                            bucket.append(v)
                elif d == invalid_mark:
                    north, south = v - width, v + width
                    if dist[north] != below and dist[south] != below and dist[v - 1] != below and dist[v + 1] != below:
                        continue  # a stale entry
                    dist[v] = k
                    if dist[north] == invalid_mark:
                        up.append(north)
                    if dist[south] == invalid_mark:
                        up.append(south)
                    if dist[v - 1] == invalid_mark:
                        up.append(v - 1)
                    if dist[v + 1] == invalid_mark:
                        up.append(v + 1)
            if fresh and up:
                pending[above] = up
                heappush(levels, above)
        if levels:
            self.level = levels[0] - 1
            if len(dirty) > self.dirty_limit:  # cells repaired since they turned INVALID: drop them
                self.dirty = [v for v in dirty if dist[v] == invalid_mark]
                self.dirty_limit = 2 * len(self.dirty) + len(dist)
        else:
            # Nothing pending: the INVALID cells left have no path.
            for v in dirty:
                if dist[v] == invalid_mark:
                    dist[v] = UNREACHABLE
            self.dirty = []
            self.level = FAR

    def settle(self, cells):
        """Raise ``level`` until every cell of ``cells`` (padded indexes) is exact."""
        waiting = cells
        while self.levels:
            dist, level, invalid_mark = self.dist, self.level, self.INVALID
            top = -1
            left = []
            for p in waiting:
                d = dist[p]
                if d > level:
                    left.append(p)
                    if d > top:
                        top = d
                elif d == invalid_mark:
                    left.append(p)
                    if top <= level:
                        top = level + 1
            if not left:
                return
            waiting = left
            self.settle_to(top)

    def settle_all(self):
        """Repair the whole field."""
        self.settle_to(FAR)
