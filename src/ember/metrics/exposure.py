"""The fire-exposure proximity proxy (metrics.md §8).

A field of Manhattan distances to the nearest burning cell (walls ignored)
is kept over the grid and lowered from each step's new ignitions only, so a
person-state costs one lookup.  Distances are tallied as integer histograms;
the exact sums of 1/d are formed once, in the report.
"""

from array import array

from ..accumulator import Accumulator
from ..grid import FAR, lower_distances


class FireExposure(Accumulator):
    def __init__(self, scenario, initial):
        self.grid = scenario.grid
        n = len(scenario.person_ids)
        self.dist = array("i", [FAR]) * self.grid.size  # FAR: no fire yet
        self.any_fire = False
        self.states = 0
        self.states_without_fire = 0
        self.histogram = {}
        self.person_histogram = [{} for _ in range(n)]
        self._lower([self.grid.index(row, col) for row, col in initial.burning])
        self._tally(initial)

    def update(self, tr):
        if tr.ignited:
            self._lower(tr.ignited)
        self._tally(tr.cur)

    def _lower(self, sources):
        """Breadth-first relaxation from new burning cells over the whole rectangle (walls too)."""
        if sources:
            self.any_fire = True
            lower_distances(self.dist, sources, self.grid.cols, self.grid.size)

    def _tally(self, state):
        active = state.active
        self.states += len(active)
        if not self.any_fire:
            self.states_without_fire += len(active)
            return
        dist, position, histogram, personal = self.dist, state.position, self.histogram, self.person_histogram
        for i in active:
            d = dist[position[i]]
            histogram[d] = histogram.get(d, 0) + 1
            mine = personal[i]
            mine[d] = mine.get(d, 0) + 1
