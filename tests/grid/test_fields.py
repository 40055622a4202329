"""The distance fields of ``ember.grid`` kept incrementally, against a fresh computation after every change.

* ``ManhattanField`` (numpy, the fire-exposure field of large grids),
  ``KernelManhattan`` (numpy, small grids where numpy is loaded) and
  ``LoweredManhattan`` (plain Python, small grids): after each batch of
  ignitions, every cell's distance equals the brute minimum of |dr| + |dc|
  over the burning cells;
* ``ExitDistances`` on its padded grid: after each batch of burning cells,
  ``distances()`` equals a plain BFS from the usable exits, and the border
  holds ``UNREACHABLE``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.cells import UNREACHABLE
from ember.grid.exit_distances import ExitDistances
from ember.grid.floor import Grid
from ember.grid.manhattan import KernelManhattan, LoweredManhattan, ManhattanField

from helpers.distances import assert_manhattan_field_follows, bfs, brute_manhattan


@st.composite
def ignition_batches(draw, max_side=14):
    rows, cols = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    cell = st.integers(0, rows * cols - 1)
    return rows, cols, draw(st.lists(st.lists(cell, min_size=1, max_size=6), min_size=1, max_size=6))


def kernel_manhattan(rows, cols):
    return KernelManhattan(rows, cols, np)


@pytest.mark.parametrize("kind", [ManhattanField, LoweredManhattan, kernel_manhattan])
@settings(max_examples=300, deadline=None)
@given(case=ignition_batches())
def test_manhattan_field_after_every_batch_is_the_brute_minimum(kind, case):
    rows, cols, batches = case
    assert_manhattan_field_follows(kind(rows, cols), rows, cols, batches)


def test_lowered_manhattan_far_from_a_fire_in_another_row_and_column():
    # A fire at one corner, then the opposite one: every cell takes the nearer, across rows and columns.
    field = LoweredManhattan(5, 7)
    field.ignite([0])
    assert field.distances().tolist() == brute_manhattan(5, 7, {0})
    field.ignite([34, 34, 0])  # again, and a cell already burning: nothing else changes
    assert field.distances().tolist() == brute_manhattan(5, 7, {0, 34})


def test_manhattan_field_on_a_grid_too_long_for_int16():
    # 4 x (rows + cols) >= 2^15 takes int32; the values must still be exact.
    rows, cols = 2, 9000
    field = ManhattanField(rows, cols)
    assert field.dtype.__name__ == "int32"
    field.ignite([5])
    field.ignite([17990, 9000])
    assert field.distances().tolist() == brute_manhattan(rows, cols, {5, 17990, 9000})


@st.composite
def burn_batches(draw):
    rows, cols = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    cells = list(range(rows * cols))
    walls = draw(st.lists(st.sampled_from(cells), max_size=rows * cols // 3, unique=True))
    open_cells = [c for c in cells if c not in walls]
    exits = draw(st.lists(st.sampled_from(open_cells), max_size=4, unique=True)) if open_cells else []
    batches = draw(st.lists(st.lists(st.sampled_from(cells), max_size=8), min_size=1, max_size=8))
    return rows, cols, walls, exits, batches


@settings(max_examples=400, deadline=None)
@given(burn_batches())
def test_exit_distances_after_every_burn_are_a_fresh_bfs(case):
    rows, cols, walls, exits, batches = case
    grid = Grid(rows, cols, walls)
    field = ExitDistances(grid, exits, batches[0])
    burning = set(batches[0])
    assert field.distances() == bfs(rows, cols, walls, exits, burning)
    for batch in batches[1:]:
        field.burn(batch)
        burning |= set(batch)
        assert field.distances() == bfs(rows, cols, walls, exits, burning)
        inside = {field.padded(cell) for cell in range(rows * cols)}
        assert all(d == UNREACHABLE for p, d in enumerate(field.dist) if p not in inside)
        assert [field.dist[field.padded(cell)] for cell in range(rows * cols)] == field.distances()
