"""Breadth-first distances from a set of sources, lowered in place (``lower_distances``)."""

import functools

from .cells import around

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
