"""The distance to the nearest usable exit, kept under deletions: eagerly, or lazily as far as it is read."""

from heapq import heappop, heappush

from .cells import FAR, UNREACHABLE


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
