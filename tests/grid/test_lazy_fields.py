"""``LazyExitDistances`` (the planner's door fields) against a fresh BFS after every burn and every repair.

After each batch of burning cells and after each request (``settle_to``
a level, ``settle`` some cells, nothing), every cell's value must say
what the class promises about the true distance (a plain BFS from the
usable exits): ``UNREACHABLE`` only where there is no path, the exact
distance where the value is at most ``level``, a lower bound above it,
and ``INVALID`` only where the distance exceeds ``level``; every cell at
distance ``level`` or less shows it; the cells asked for are exact.
After ``settle_all`` the field is ``ExitDistances``' own, cell for cell.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.cells import FAR, UNREACHABLE
from ember.grid.exit_distances import ExitDistances, LazyExitDistances
from ember.grid.floor import Grid

from helpers.distances import bfs


def check_promises(field, truth):
    """Every cell's value against ``truth`` (the BFS, cell order)."""
    level = field.level
    for cell, t in enumerate(truth):
        p = field.padded(cell)
        d = field.dist[p]
        true = FAR if t == UNREACHABLE else t
        if d == UNREACHABLE:
            assert true == FAR, (cell, d, t)
        elif d == field.INVALID:
            assert true > level, (cell, t, level)
        elif d <= level:
            assert d == true, (cell, d, t, level)
        else:
            assert true >= d, (cell, d, t)
        if true != FAR and true <= level:
            assert d == true, (cell, d, t, level)
        assert field.lower_bound(p) <= true
        if field.exact(p):
            assert field.lower_bound(p) == true, (cell, d, t, level)
    inside = {field.padded(cell) for cell in range(len(truth))}
    assert all(d == UNREACHABLE for p, d in enumerate(field.dist) if p not in inside)


request = st.one_of(
    st.tuples(st.just("none"), st.just(0)),
    st.tuples(st.just("level"), st.integers(0, 40)),
    st.tuples(st.just("cells"), st.lists(st.integers(0, 10_000), max_size=4)),
)


@st.composite
def lazy_cases(draw, max_side=12):
    rows, cols = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    cells = list(range(rows * cols))
    walls = draw(st.lists(st.sampled_from(cells), max_size=rows * cols // 3, unique=True))
    open_cells = [c for c in cells if c not in walls]
    exits = draw(st.lists(st.sampled_from(open_cells), max_size=4, unique=True)) if open_cells else []
    burns = draw(st.lists(st.tuples(st.lists(st.sampled_from(cells), max_size=8), request), min_size=1, max_size=10))
    return rows, cols, walls, exits, burns


def run_case(case):
    rows, cols, walls, exits, burns = case
    grid = Grid(rows, cols, walls)
    burning = set(burns[0][0])
    field = LazyExitDistances(grid, exits, burns[0][0])
    check_promises(field, bfs(rows, cols, walls, exits, burning))
    for batch, (kind, arg) in burns[1:]:
        field.burn(batch)
        burning |= set(batch)
        truth = bfs(rows, cols, walls, exits, burning)
        check_promises(field, truth)
        if kind == "level":
            field.settle_to(arg)
            assert field.level >= arg
        elif kind == "cells":
            asked = [field.padded(c % (rows * cols)) for c in arg]
            field.settle(asked)
            assert all(field.exact(p) for p in asked)
        check_promises(field, truth)
    field.settle_all()
    assert field.level == FAR and not field.levels
    eager = ExitDistances(grid, exits, burning)
    assert field.distances() == eager.distances() == bfs(rows, cols, walls, exits, burning)


@settings(max_examples=500, deadline=None)
@given(lazy_cases())
def test_lazy_exit_distances_keep_their_promises_after_every_burn_and_repair(case):
    run_case(case)


@settings(max_examples=60, deadline=None)
@given(lazy_cases(max_side=30))
def test_lazy_exit_distances_on_larger_grids(case):
    run_case(case)


def test_a_pocket_cut_off_is_proven_unreachable_only_when_asked():
    # One row: exit at 0; burning cell 3 cuts off cells 4..7.
    grid = Grid(1, 8, [])
    field = LazyExitDistances(grid, [0])
    assert field.distances() == list(range(8))
    field.burn([3])
    p6 = field.padded(6)
    assert field.dist[p6] == 6 and not field.exact(p6)  # a lower bound until repaired
    field.settle([field.padded(1)])
    assert field.dist[field.padded(1)] == 1 and field.exact(field.padded(1))
    field.settle([p6])
    assert field.dist[p6] == UNREACHABLE and field.exact(p6)
    assert field.distances() == [0, 1, 2, -1, -1, -1, -1, -1]


def test_burning_a_waiting_cell_forgets_it():
    # A 3 x 3 room, exit in the corner: cells beyond a burnt cell wait; burning one of them is harmless.
    grid = Grid(3, 3, [])
    field = LazyExitDistances(grid, [0])
    field.burn([1])
    field.settle_to(1)
    field.burn([2, 5])
    field.settle_all()
    assert field.distances() == bfs(3, 3, [], [0], {1, 2, 5})
