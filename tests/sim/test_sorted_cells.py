"""The simulator's burning list (``SortedCells``): merged per step, shared, plain or read-only.

Compared after every merge with the list a plain sort of every cell so far
gives (the recomputation the incremental structure replaces).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.canonical import canonical_json
from ember.frozen import BurningCells, FrozenList, SharedCells
from ember.sim.simulator import BurningText, SortedCells


@st.composite
def batches(draw):
    rows, cols = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    order = draw(st.permutations(range(rows * cols)))
    cut = draw(st.lists(st.integers(0, rows * cols), max_size=8))
    bounds = sorted({0, rows * cols, *cut})
    groups = [sorted(order[a:b]) for a, b in zip(bounds, bounds[1:])]
    return rows, cols, groups


@pytest.mark.parametrize("frozen", [False, True])
@settings(max_examples=100, deadline=None)
@given(case=batches())
def test_the_list_after_every_merge_is_the_sorted_list_of_every_cell_so_far(frozen, case):
    rows, cols, groups = case
    cells = SortedCells(groups[0], cols, rows, frozen=frozen)
    so_far = list(groups[0])
    handed_out = [(cells.shared(), [list(c) for c in cells.shared()])]
    for group in groups[1:]:
        cells.add(group)
        so_far += group
        want = [[c // cols, c % cols] for c in sorted(so_far)]
        assert cells.shared() == want
        assert type(cells.shared()) is (BurningCells if frozen else SharedCells) and cells.shared().source is cells
        assert all(type(cell) is (FrozenList if frozen else list) for cell in cells.shared())
        handed_out.append((cells.shared(), want))
    # A merge builds a new list: every list handed out before still holds what it held.
    for shared, content in handed_out:
        assert shared == content


def test_frozen_lists_are_the_kept_ones_and_refuse_changes():
    cells = SortedCells([5, 1, 3], 4, 2, frozen=True)
    kept = cells.shared()
    assert kept is cells.shared() and kept == [[0, 1], [0, 3], [1, 1]] and kept.source is cells
    for change in (lambda: kept.append([1, 2]), lambda: kept[0].__setitem__(0, -1), lambda: kept.sort()):
        with pytest.raises(TypeError, match="read-only"):
            change()
    copy = list(kept)
    copy[0] = [9, 9]
    assert kept == [[0, 1], [0, 3], [1, 1]]
    cells.add([2])
    assert kept == [[0, 1], [0, 3], [1, 1]] and cells.shared() == [[0, 1], [0, 2], [0, 3], [1, 1]]
    assert cells.shared()[0] is kept[0]  # the cells' lists are shared by every list made after


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
