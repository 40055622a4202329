"""The fire-exposure proximity proxy (metrics.md §8).

A field of Manhattan distances to the nearest burning cell (walls ignored)
is kept over the grid, so a person-state costs one lookup.  Distances are
tallied as integer histograms; the exact sums of 1/d are formed once, in
the report.

Two ways to keep the field, chosen by grid size (the same integers either
way; tests/metrics/test_exposure.py compares both with a brute-force
minimum):

* ``LoweredField``: breadth-first relaxation from each step's new
  ignitions over the whole rectangle.  Cheap while the fire is small or the
  grid is, but a cell's distance drops by one every few steps as the fire
  comes closer, and each drop is a Python-level visit: on a 200x200 hall
  that burns out it was a third of ``measure_run``.
* ``TransformField``: a numpy distance transform of the burning mask
  (``grid.ManhattanField``), its row pass redone for the rows with new
  ignitions and its column pass after each step with ignitions: a few
  C-speed passes over the grid whatever the fire does.
"""

from array import array
from collections import Counter

from ..accumulator import Accumulator
from ..grid.breadth_first import lower_distances
from ..grid.cells import FAR
from ..grid.manhattan import ManhattanField

#: Grids of at least this many cells keep the field with numpy: below it, one
#: transform (about 15 numpy calls) costs more than the few cells the BFS visits.
TRANSFORM_MIN_CELLS = 4096


class LoweredField:
    """Manhattan distances lowered by BFS from each batch of new burning cells."""

    def __init__(self, grid):
        self.grid = grid
        self.dist = array("i", [FAR]) * grid.size  # FAR: no fire yet

    def ignite(self, cells):
        lower_distances(self.dist, cells, self.grid.cols, self.grid.size)

    def at(self, cells):
        dist = self.dist
        return [dist[cell] for cell in cells]


class TransformField:
    """Manhattan distances by a numpy distance transform (``grid.ManhattanField``)."""

    def __init__(self, grid):
        self.field = ManhattanField(grid.rows, grid.cols)
        self.np = self.field.np

    def ignite(self, cells):
        self.field.ignite(cells)

    def at(self, cells):
        return self.field.distances()[self.np.array(cells, dtype=self.np.intp)].tolist()


class FireExposure(Accumulator):
    def __init__(self, scenario, initial):
        self.grid = scenario.grid
        n = len(scenario.person_ids)
        self.field = TransformField(self.grid) if self.grid.size >= TRANSFORM_MIN_CELLS else LoweredField(self.grid)
        self.any_fire = False
        self.states = 0
        self.states_without_fire = 0
        self.histogram = {}  # a plain dict: a Counter's per-item updates (the small grids' loop) are slower
        self.person_histogram = [{} for _ in range(n)]
        self._ignite([self.grid.index(row, col) for row, col in initial.burning])
        self._tally(initial)

    def update(self, tr):
        if tr.ignited:
            self._ignite(tr.ignited)
        self._tally(tr.cur)

    def _ignite(self, cells):
        if cells:
            self.any_fire = True
            self.field.ignite(cells)

    def _tally(self, state):
        active = state.active
        self.states += len(active)
        if not self.any_fire:
            self.states_without_fire += len(active)
            return
        if not active:
            return
        position, histogram, personal = state.position, self.histogram, self.person_histogram
        if isinstance(self.field, LoweredField):
            dist = self.field.dist  # looked up as it goes: a list for a few people costs more
            for i in active:
                d = dist[position[i]]
                histogram[d] = histogram.get(d, 0) + 1
                mine = personal[i]
                mine[d] = mine.get(d, 0) + 1
            return
        distances = self.field.at([position[i] for i in active])
        for d, count in Counter(distances).items():  # a step's distances counted at C speed, then merged
            histogram[d] = histogram.get(d, 0) + count
        for i, d in zip(active, distances):
            mine = personal[i]
            mine[d] = mine.get(d, 0) + 1
