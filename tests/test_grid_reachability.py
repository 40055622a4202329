"""``ExitReachability``'s first flood, run by run (a scanline fill; issue 21), against a plain per-cell flood.

The incremental updates after ignitions are tested in tests/test_grid.py;
here the starting state they build on: every component's reach, label and
number of usable exits must be what a cell-by-cell search from the exits,
in their order, gives (walls and fire cut rows into many runs, several
exits share a component or have their own, an exit may burn).
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid import ExitReachability, Grid, around


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
