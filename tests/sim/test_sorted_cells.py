"""The simulator's burning list (``SortedCells``): merged per step, handed out fresh or shared.

Compared after every merge with the list a plain sort of every cell so far
gives (the recomputation the incremental structure replaces).
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.canonical import canonical_json
from ember.sim.simulator import BurningText, SortedCells


@st.composite
def batches(draw):
    rows, cols = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    order = draw(st.permutations(range(rows * cols)))
    cut = draw(st.lists(st.integers(0, rows * cols), max_size=8))
    bounds = sorted({0, rows * cols, *cut})
    groups = [sorted(order[a:b]) for a, b in zip(bounds, bounds[1:])]
    return rows, cols, groups


@settings(max_examples=200, deadline=None)
@given(batches())
def test_the_list_after_every_merge_is_the_sorted_list_of_every_cell_so_far(case):
    rows, cols, groups = case
    cells = SortedCells(groups[0], cols, rows)
    so_far = list(groups[0])
    handed_out = [(cells.shared(), [list(c) for c in cells.shared()])]
    for group in groups[1:]:
        cells.add(group)
        so_far += group
        want = [[c // cols, c % cols] for c in sorted(so_far)]
        assert cells.fresh() == want
        assert cells.shared() == want
        handed_out.append((cells.shared(), want))
    # A merge builds a new list: every list handed out before still holds what it held.
    for shared, content in handed_out:
        assert shared == content


def test_fresh_lists_are_fresh_and_shared_lists_are_the_kept_ones():
    cells = SortedCells([5, 1, 3], 4, 2)
    fresh, again = cells.fresh(), cells.fresh()
    assert fresh == again == [[0, 1], [0, 3], [1, 1]]
    assert all(a is not b for a, b in zip(fresh, again))
    assert all(a is not b for a, b in zip(fresh, cells.shared()))
    assert all(a is b for a, b in zip(cells.shared(), cells.shared()))
    fresh[0][0] = -1
    assert cells.fresh()[0] == [0, 1]


@settings(max_examples=300, deadline=None)
@given(batches())
def test_the_kept_burning_text_after_every_add_is_the_encoded_sorted_list(case):
    # BurningText: the canonical bytes the replay compares with, kept row by row.
    rows, cols, groups = case
    text = BurningText(groups[0], cols)
    so_far = list(groups[0])
    assert text.json() == canonical_json([[c // cols, c % cols] for c in sorted(so_far)])
    for group in groups[1:]:
        text.add(group)
        so_far += group
        assert text.json() == canonical_json([[c // cols, c % cols] for c in sorted(so_far)])
