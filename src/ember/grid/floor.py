"""The floor of a scenario: its rows, columns and walls, with one-off searches over it."""

from array import array

from .breadth_first import lower_distances
from .cells import FAR, UNREACHABLE, around


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
