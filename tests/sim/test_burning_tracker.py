"""The greedy and planner policies' burning tracker against a scan of every element.

``_BurningTracker.changed`` finds a step's new burning cells by galloping
(O(k log n) comparisons) and checks the rest at C speed; whatever list it
is given (growing as the simulator's do, unsorted, shrinking, rewritten,
with duplicates, or changed by the caller after the policy answered) its
answer must be the one of the plain scan below, which looks at every
element: the new cells in list order, or None when cells left the list.
"""

import copy as copy_module
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.floor import Grid
from ember.sim.policies import _BurningTracker, _grown_from, _insertions
from ember.sim.simulator import SortedCells

ROWS, COLS = 6, 7
GRID = Grid(ROWS, COLS, [])


class ScanTracker:
    """The reference: every element looked at, every time (the tracker before the scale work)."""

    def __init__(self):
        self.seen = set()
        self.count = 0  # the length of the last list accepted

    def changed(self, burning):
        if len(burning) == self.count:
            return []
        new = []
        for r, c in burning:
            cell = r * COLS + c
            if cell not in self.seen:
                self.seen.add(cell)
                new.append(cell)
        if self.count + len(new) != len(burning):
            return None
        self.count = len(burning)
        return new


def as_lists(cells):
    return [[c // COLS, c % COLS] for c in cells]


@st.composite
def growing(draw):
    """Sorted lists, each a superset of the one before (what a simulator gives)."""
    order = draw(st.permutations(range(ROWS * COLS)))
    sizes = sorted(draw(st.lists(st.integers(0, ROWS * COLS), min_size=1, max_size=10)))
    return [as_lists(sorted(order[:n])) for n in sizes]


@st.composite
def anything(draw):
    """Lists of cells in any order, with repeats, shrinking or growing."""
    cell = st.integers(0, ROWS * COLS - 1)
    return [as_lists(draw(st.lists(cell, max_size=12))) for _ in range(draw(st.integers(1, 8)))]


def run_both(observations, shared=False, scribble=None):
    tracker, reference = _BurningTracker(GRID, shared), ScanTracker()
    for k, burning in enumerate(observations):
        got, want = tracker.changed(burning), reference.changed(burning)
        assert got == want, (k, burning)
        if got is None:
            tracker, reference = _BurningTracker(GRID, shared), ScanTracker()  # as the policies start afresh
            assert tracker.changed(burning) == reference.changed(burning)
        if scribble is not None:
            scribble(burning)


@settings(max_examples=300, deadline=None)
@given(growing())
def test_growing_lists_give_the_scans_new_cells(observations):
    run_both(observations)


@settings(max_examples=300, deadline=None)
@given(growing())
def test_growing_lists_shared_give_the_scans_new_cells(observations):
    # shared=True: the simulator's own lists, kept by reference and trusted to grow by insertions.
    run_both(observations, shared=True)


@settings(max_examples=500, deadline=None)
@given(anything())
def test_any_lists_give_the_scans_answer(observations):
    run_both(observations)


@settings(max_examples=300, deadline=None)
@given(growing(), st.data())
def test_a_caller_scribbling_on_an_observation_afterwards_changes_nothing(observations, data):
    def scribble(burning):
        if burning:
            cell = burning[data.draw(st.integers(0, len(burning) - 1))]
            cell[0], cell[1] = data.draw(st.integers(-2, ROWS)), data.draw(st.integers(-2, COLS))

    # The reference sees the lists before the scribbling, as the tracker does: copies of each.
    copies = [[list(c) for c in burning] for burning in observations]
    tracker, reference = _BurningTracker(GRID), ScanTracker()
    for burning, copy in zip(observations, copies):
        assert tracker.changed(burning) == reference.changed(copy)
        scribble(burning)


def test_insertions_are_found_and_checked():
    shorter = as_lists([1, 4, 9])
    assert _insertions(as_lists([0, 1, 4, 5, 9, 20]), shorter) == [0, 3, 5]
    assert _insertions(as_lists([1, 4, 9, 10, 11]), shorter) == [3, 4]
    assert _insertions(as_lists([1, 3, 9, 10]), shorter) is None  # 4 left: not a superset
    assert _insertions(as_lists([4, 1, 9, 10]), shorter) is None  # not in order
    assert _insertions(as_lists([1, 3, 9, 10]), shorter, check=False) is not None  # unchecked: trusted


@pytest.mark.parametrize("frozen", [True, False])  # a public simulator's lists, a shared-lists one's
@settings(max_examples=200, deadline=None)
@given(observations=growing(), data=st.data())
def test_a_simulators_lists_give_the_scans_new_cells_without_a_comparison(frozen, observations, data):
    # The lists of a SortedCells, handed out in order (each from the one before: the merge's own cells,
    # no comparison) or now and then an older one again (the scan's answer, by comparison).
    cells = SortedCells([r * COLS + c for r, c in observations[0]], COLS, ROWS, frozen=frozen)
    lists = [cells.shared()]
    for burning in observations[1:]:
        before = {r * COLS + c for r, c in lists[-1]}
        cells.add(sorted(r * COLS + c for r, c in burning if r * COLS + c not in before))
        lists.append(cells.shared())
    tracker, reference = _BurningTracker(GRID, shared=not frozen), ScanTracker()
    previous = None
    for k, burning in enumerate(lists):
        if k and data.draw(st.booleans()):
            burning = lists[data.draw(st.integers(0, k))]  # a list handed out before
        if previous is not None and burning is cells.shared() and cells.grown[0] is previous:
            assert _grown_from(burning, previous) == cells.grown[1]
        got, want = tracker.changed(burning), reference.changed(burning)
        assert got == want, (k, burning)
        if got is None:
            tracker, reference = _BurningTracker(GRID, shared=not frozen), ScanTracker()
            assert tracker.changed(burning) == reference.changed(burning)
        previous = tracker.previous


@pytest.mark.parametrize("frozen", [True, False])
def test_the_merges_own_cells_are_taken_only_for_its_own_two_lists(frozen):
    cells = SortedCells([3, 9], COLS, ROWS, frozen=frozen)
    first = cells.shared()
    cells.add([1, 5])
    second = cells.shared()
    assert _grown_from(second, first) == [1, 5]
    assert _grown_from(list(second), first) is None  # a plain copy: compared
    assert _grown_from(first, first) is None
    cells.add([20])
    assert _grown_from(second, first) is None  # no longer the current list
    assert _grown_from(cells.shared(), second) == [20]
    for copy in (list(second), pickle.loads(pickle.dumps(second)), second[:], copy_module.copy(second)):
        assert type(copy) is list and copy == second  # a copy is plain: nothing of the source goes with it
