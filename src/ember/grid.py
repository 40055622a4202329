"""Grid geometry shared by the simulator, the checks and the metrics.

A cell is the integer ``row * cols + col``: flat indexes make the per-step
work list and bytearray lookups instead of tuple hashing.
"""

from array import array

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


class ExitReachability:
    """Which cells still connect to a usable exit (simulator.md §3 rule 6).

    Burning only grows, so the connected region only shrinks; it is
    recomputed on a step only when one of that step's ignitions lies inside
    it (an ignition elsewhere cannot cut any path to an exit).
    """

    def __init__(self, grid, exit_cells, burning_cells):
        self.grid = grid
        self.exit_cells = list(exit_cells)
        self.passable = bytearray(grid.open)
        for cell in burning_cells:
            self.passable[cell] = 0
        self.reach = grid.reachable(self.exit_cells, self.passable)

    def ignite(self, cells):
        affected = False
        for cell in cells:
            self.passable[cell] = 0
            affected = affected or self.reach[cell]
        if affected:
            self.reach = self.grid.reachable(self.exit_cells, self.passable)
