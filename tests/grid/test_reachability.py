"""``ExitReachability``'s first flood, run by run (a scanline fill), against a plain per-cell flood;
and its cut's shortcut (``ONE_PIECE``) under every pattern of a deleted cell's eight neighbours.

The incremental updates after ignitions are tested in tests/grid/test_grid.py;
here the starting state they build on: every component's reach, label and
number of usable exits must be what a cell-by-cell search from the exits,
in their order, gives (walls and fire cut rows into many runs, several
exits share a component or have their own, an exit may burn).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.cells import around
from ember.grid.floor import Grid
from ember.grid.reachability import ONE_PIECE, ExitReachability, obstacle_arcs


def plain_flood(grid, exit_cells, burning):
    """(reach, label, exits per component) by a per-cell search from each exit not yet reached."""
    passable = bytearray(grid.open)
    for cell in burning:
        passable[cell] = 0
    reach, label, exits = bytearray(grid.size), [0] * grid.size, []
    is_exit = set(exit_cells)
    for start in exit_cells:
        if not passable[start] or reach[start]:
            continue
        cid, count, stack = len(exits), 0, [start]
        reach[start] = 1
        while stack:
            i = stack.pop()
            label[i] = cid
            count += i in is_exit
            for j in around(i, grid.cols, grid.size):
                if j >= 0 and passable[j] and not reach[j]:
                    reach[j] = 1
                    stack.append(j)
        exits.append(count)
    return reach, label, exits


@st.composite
def floors(draw):
    rows, cols = draw(st.integers(1, 16)), draw(st.integers(1, 16))
    size = rows * cols
    density = draw(st.sampled_from([0.0, 0.2, 0.4, 0.6]))
    walls = {c for c in range(size) if draw(st.floats(0, 1)) < density}
    walls.discard(0)  # at least one open cell, for an exit
    free = [c for c in range(size) if c not in walls]
    exits = draw(st.lists(st.sampled_from(free), min_size=1, max_size=6, unique=True))
    burning = draw(st.lists(st.sampled_from(free), max_size=6, unique=True))
    return rows, cols, sorted(walls), exits, burning


@settings(max_examples=400, deadline=None)
@given(floors())
def test_the_first_flood_is_the_plain_per_cell_one(floor):
    rows, cols, walls, exits, burning = floor
    grid = Grid(rows, cols, walls)
    kept = ExitReachability(grid, exits, burning)
    reach, label, counts = plain_flood(grid, exits, burning)
    assert bytes(kept.reach) == bytes(reach)
    assert [kept._label[c] for c in range(grid.size) if reach[c]] == [label[c] for c in range(grid.size) if reach[c]]
    assert kept._exits == counts


# -- the cut's shortcut: one obstacle arc at most, no split ------------------------------------

RING = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))  # N NE E SE S SW W NW
PATTERN_BIT = {(-1, 0): 0, (0, 1): 1, (1, 0): 2, (0, -1): 3, (-1, 1): 4, (1, 1): 5, (1, -1): 6, (-1, -1): 7}
OUTER = [(r, c) for r in range(5) for c in range(5) if max(abs(r - 2), abs(c - 2)) == 2]


def reference_reach(grid, exits, burning):
    blocked = bytearray(grid.open)
    for cell in burning:
        blocked[cell] = 0
    reach, stack = bytearray(grid.size), [e for e in exits if blocked[e]]
    for e in stack:
        reach[e] = 1
    while stack:
        i = stack.pop()
        for j in around(i, grid.cols, grid.size):
            if j >= 0 and blocked[j] and not reach[j]:
                reach[j] = 1
                stack.append(j)
    return bytes(reach)


def five_by_five(pattern, outer_walls):
    """A 5 x 5 floor: the centre's eight neighbours open where ``pattern`` says, the outer ring open
    but for ``outer_walls``; every open outer cell is an exit."""
    walls = [r * 5 + c for r, c in outer_walls]
    for dr, dc in RING:
        if not pattern >> PATTERN_BIT[(dr, dc)] & 1:
            walls.append((2 + dr) * 5 + 2 + dc)
    grid = Grid(5, 5, walls)
    exits = [r * 5 + c for r, c in OUTER if (r, c) not in outer_walls]
    return grid, exits


@pytest.mark.parametrize(
    "outer_walls",
    [(), tuple(OUTER[:-1]), ((0, 2), (4, 2)), ((2, 0), (2, 4)), tuple(p for p in OUTER if p[0] in (0, 4))],
    ids=["open", "one-exit", "walls-north-south", "walls-west-east", "rows-walled"],
)
def test_deleting_the_centre_under_every_ring_pattern_gives_the_recomputed_reach(outer_walls):
    centre = 2 * 5 + 2
    for pattern in range(256):
        grid, exits = five_by_five(pattern, outer_walls)
        if not exits:
            continue
        kept = ExitReachability(grid, exits, [])
        kept.ignite([centre])
        assert bytes(kept.reach) == reference_reach(grid, exits, [centre]), (pattern, outer_walls)


def test_one_piece_patterns_never_split_the_centres_neighbours():
    # The shortcut's claim, directly: with two or more open 4-neighbours and at most one obstacle arc,
    # the centre's open 4-neighbours stay joined through its open ring cells once the centre is gone.
    for pattern in range(256):
        if not ONE_PIECE[pattern]:
            continue
        assert bin(pattern & 15).count("1") >= 2 and obstacle_arcs(pattern) <= 1
        grid, _ = five_by_five(pattern, tuple(OUTER))  # only the ring itself is open
        seeds = [(2 + dr) * 5 + 2 + dc for (dr, dc) in RING[::2] if grid.open[(2 + dr) * 5 + 2 + dc]]
        joined = reference_reach(grid, seeds[:1], [2 * 5 + 2])
        assert all(joined[s] for s in seeds), pattern
