"""Which cells still connect to a usable exit, kept under deletions (simulator.md §3 rule 6)."""

from array import array
from collections import deque

from .cells import around


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
