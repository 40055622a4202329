"""The Manhattan distance to the nearest burning cell, walls ignored, kept as cells ignite.

Two forms of one field: ``ManhattanField`` by numpy passes over the whole
grid (large grids), ``LoweredManhattan`` by lowering in plain Python only
the cells whose distance drops (small grids, where a numpy call costs more
than the cells it would touch, and numpy is never imported).
"""

from array import array

from .cells import FAR


class LoweredManhattan:
    """The same field as ``ManhattanField``, lowered in place, separably: along the row, then down columns.

    The distance is min over rows r' of (|r - r'| + the distance along row
    r' to its nearest burning column), so two flat arrays are kept: ``along``
    (each cell's distance within its row) and ``dist`` (the field).  A new
    burning cell lowers ``along`` outward in its row while that shortens
    it, and each cell so lowered lowers ``dist`` up and down its column
    while that shortens it.  Both fields are 1-Lipschitz along a line
    (neighbours differ by at most 1), so the first cell not lowered ends
    each walk: the work is the cells whose distance drops, each looked at
    once, where a breadth-first relaxation looks at four neighbours of
    each (about 1.7x the time on the office floor).
    """

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.size = size = rows * cols
        self.dist = array("i", [FAR]) * size  # FAR: no fire yet
        self.along = array("i", [FAR]) * size

    def ignite(self, cells):
        dist, along, cols, size = self.dist, self.along, self.cols, self.size
        for x in cells:
            start = x - x % cols
            # Rightwards from x, then leftwards from x - 1: each cell lowered along the row lowers its
            # column at once (the order of the column walks does not change the minimum they reach,
            # and no list of the row's lowered cells is built).
            for k, v, stop, step in ((x, 0, start + cols, 1), (x - 1, 1, start - 1, -1)):
                while k != stop and along[k] > v:
                    along[k] = v
                    if dist[k] > v:  # else the column already has as near a fire, at this cell and so along it
                        dist[k] = v
                        j, w = k - cols, v + 1
                        while j >= 0 and dist[j] > w:
                            dist[j] = w
                            j -= cols
                            w += 1
                        j, w = k + cols, v + 1
                        while j < size and dist[j] > w:
                            dist[j] = w
                            j += cols
                            w += 1
                    k += step
                    v += 1

    def distances(self):
        """The field (cell index -> distance, FAR until a cell burns), kept: read it, never change it."""
        return self.dist


class KernelManhattan:
    """The same field as ``ManhattanField``, by numpy, one whole-grid minimum for each new burning cell.

    The distances from a cell (r, c) are a window of one array of |dr| + |dc|
    (``diamond``, (2 rows - 1) x (2 cols - 1), its centre the window's (r, c)),
    so a new burning cell is ``np.minimum(field, window, out=field)``: one
    numpy call over the grid whatever the fire does, where the lowered field
    visits every cell whose distance drops in Python (on the office floor
    about 38 a burning cell, 2.7-3 ms an episode, against about 1 ms here).  For
    small grids, where a call over the grid costs little more than its
    overhead; the distance transform is for large ones.
    """

    def __init__(self, rows, cols, np):
        self.np = np
        self.rows, self.cols = rows, cols
        far = rows + cols  # beyond any distance on the grid
        dtype = np.int16 if far < 2**15 else np.int32
        self.diamond = np.abs(np.arange(1 - rows, rows, dtype=dtype))[:, None] + np.abs(
            np.arange(1 - cols, cols, dtype=dtype)
        )
        self.grid = np.full((rows, cols), far, dtype=dtype)  # far: no fire yet
        self.dist = self.grid.reshape(-1)  # a view: cell index -> distance

    def ignite(self, cells):
        np, grid, diamond, rows, cols = self.np, self.grid, self.diamond, self.rows, self.cols
        for x in cells:
            r, c = rows - 1 - x // cols, cols - 1 - x % cols  # the window's corner in ``diamond``
            np.minimum(grid, diamond[r : r + rows, c : c + cols], out=grid)

    def distances(self):
        """The field as a flat integer array (cell index -> distance), kept: read it, never change it."""
        return self.dist


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
