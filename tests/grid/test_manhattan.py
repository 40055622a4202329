"""``ManhattanField``'s column pass by doubling rounds, on grids tall enough for every round.

tests/grid/test_fields.py checks the field on grids up to 14 x 14 (rounds
s = 1, 2, 4, 8); here tall and narrow grids, up to 300 rows (rounds up to
s = 256, a last round reaching past the grid), against the brute minimum.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.manhattan import ManhattanField

from helpers.distances import assert_manhattan_field_follows


@st.composite
def tall_batches(draw):
    rows, cols = draw(st.integers(2, 300)), draw(st.integers(1, 3))
    cell = st.integers(0, rows * cols - 1)
    return rows, cols, draw(st.lists(st.lists(cell, min_size=1, max_size=4), min_size=1, max_size=4))


@settings(max_examples=150, deadline=None)
@given(tall_batches())
def test_a_tall_field_after_every_batch_is_the_brute_minimum(case):
    rows, cols, batches = case
    assert_manhattan_field_follows(ManhattanField(rows, cols), rows, cols, batches)


def test_one_fire_at_either_end_of_a_column_of_every_height():
    for rows in (2, 3, 5, 17, 64, 65, 129, 257):
        for cell in (0, rows - 1):
            field = ManhattanField(rows, 1)
            field.ignite([cell])
            assert field.distances().tolist() == [abs(r - cell) for r in range(rows)], (rows, cell)
