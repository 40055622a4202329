"""The fire-exposure proximity proxy (metrics.md §8).

A field of Manhattan distances to the nearest burning cell (walls ignored)
is kept over the grid, so a person-state costs one lookup.  Distances are
tallied as integer counts; the exact sums of 1/d are formed once, in the
report.

Two ways to keep the field, chosen by grid size (the same integers either
way; tests/metrics/test_exposure.py compares both with a brute-force
minimum):

* ``LoweredField``: the cells whose distance drops, lowered in place from
  each step's new ignitions (``grid.LoweredManhattan``: along the row, then
  down the columns).  Cheap while the grid is small, but a cell's distance
  drops by one every few steps as the fire comes closer, and each drop is
  a Python-level visit: on a 200x200 hall that burns out it was a third of
  ``measure_run``.
* ``TransformField``: a numpy distance transform of the burning mask
  (``grid.ManhattanField``), its row pass redone for the rows with new
  ignitions and its column pass after each step with ignitions: a few
  C-speed passes over the grid whatever the fire does.

And two ways to tally the distances per person, with the field: a dict
{distance: count} per person on small floors (``PersonHistograms``), and
on large ones numpy arrays of runs of equal distances and an exact
integer fraction per person (``CompactExposures``): a stadium's 50,000
people hold no dict and no int object per distance.  Both give the same
results (tests/metrics/test_compact_exposures.py).
"""

import sys
from math import lcm
from operator import truediv

from ..accumulator import Accumulator
from ..grid.manhattan import KernelManhattan, LoweredManhattan, ManhattanField
from .report import exposure_floats

#: Grids of at least this many cells keep the field with numpy: below it, one
#: transform (about 15 numpy calls) costs more than the few cells the BFS visits.
TRANSFORM_MIN_CELLS = 4096


class LoweredField:
    """Manhattan distances lowered in place from each batch of new burning cells (``LoweredManhattan``)."""

    def __init__(self, grid):
        self.field = LoweredManhattan(grid.rows, grid.cols)
        self.dist = self.field.dist

    def ignite(self, cells):
        self.field.ignite(cells)

    def at(self, cells):
        dist = self.dist
        return [dist[cell] for cell in cells]


class KernelField:
    """Manhattan distances by numpy, a minimum per new burning cell (``grid.KernelManhattan``): small grids."""

    def __init__(self, grid, np):
        self.field = KernelManhattan(grid.rows, grid.cols, np)
        self.dist = self.field.dist

    def ignite(self, cells):
        self.field.ignite(cells)

    def at(self, cells):
        """The distances at ``cells`` (a list of cell indexes), as a list of ints."""
        return self.dist.take(cells).tolist()


class TransformField:
    """Manhattan distances by a numpy distance transform (``grid.ManhattanField``)."""

    def __init__(self, grid):
        self.field = ManhattanField(grid.rows, grid.cols)
        self.np = self.field.np

    def ignite(self, cells):
        self.field.ignite(cells)

    def at(self, cells):
        """The distances at ``cells`` (a sequence of cell indexes), as a numpy array."""
        return self.field.distances()[self.np.array(cells, dtype=self.np.intp)]


class PersonHistograms:
    """Per person a dict {distance: count}, and the whole episode's: for small floors, in plain Python."""

    def __init__(self, people):
        self.histogram = {}  # a plain dict: a Counter's per-item updates are slower here
        self.person_histogram = [{} for _ in range(people)]

    def tally(self, active, distances):
        histogram, personal = self.histogram, self.person_histogram
        for i, d in zip(active, distances):
            histogram[d] = histogram.get(d, 0) + 1
            mine = personal[i]
            mine[d] = mine.get(d, 0) + 1

    def person_exposures(self):
        """Per person, in person order: (nearest distance or None, the exposure's float)."""
        histograms = self.person_histogram
        nearest = [min(histogram) if histogram else None for histogram in histograms]
        return list(zip(nearest, exposure_floats(histograms)))


class CompactExposures:
    """The same results as ``PersonHistograms``, for large floors: numpy arrays and two integers a person.

    A person's distance to the fire changes by at most 2 a step (one cell
    of its own move, one of the fire's spread), and often stays the same
    for many steps.  So each person has a run under way, in numpy arrays:
    its distance and how many states it has held it (``current``,
    ``run``), and its nearest distance so far (``nearest``).  When the
    distance changes, the run ends and is added to the person's exact
    exposure, kept as an integer fraction ``numerator / denominator``
    with the denominator the lcm of the person's own distances (grown, and
    the numerator scaled with it, when a distance that does not divide it
    comes): two Python integers of a few hundred bits a person, where a
    histogram dict held an entry and an int object per distance.  The
    episode's histogram is a count per distance.  ``numerator /
    denominator`` is the correctly rounded float of the exact sum, as the
    report's ``exposure_floats`` of the histogram is.
    """

    def __init__(self, people, far):
        import numpy as np

        self.np = np
        self.far = far  # above every distance
        self.current = np.full(people, -1, dtype=np.int64)  # -1: no run under way
        self.run = np.zeros(people, dtype=np.int64)
        self.nearest = np.full(people, far, dtype=np.int64)  # far: no state with fire yet
        self.counts_by_distance = np.zeros(far, dtype=np.int64)
        self.numerator = [0] * people
        self.denominator = [1] * people
        self.active_list = self.active_array = None

    def tally(self, active, distances):
        np = self.np
        if active is not self.active_list:  # the simulator replaces the list when it changes
            self.active_list, self.active_array = active, np.array(active, dtype=np.intp)
        people = self.active_array
        distances = distances.astype(np.int64, copy=False)
        self.counts_by_distance += np.bincount(distances, minlength=self.far)
        held = self.current[people]
        changed = held != distances
        if changed.any():
            who, new = people[changed], distances[changed]
            self._end_runs(who)
            self.current[who] = new
            self.nearest[who] = np.minimum(self.nearest[who], new)
        self.run[people] += 1

    def _end_runs(self, who):
        """Add the runs under way of the people ``who`` (an index array) to their exposures."""
        held = self.current[who]
        ended = held >= 0
        if not ended.any():
            return
        who = who[ended]
        numerator, denominator = self.numerator, self.denominator
        for i, d, count in zip(who.tolist(), held[ended].tolist(), self.run[who].tolist()):
            if not d:
                continue  # a person on a burning cell: the report's invariant refuses the episode's histogram
            q = denominator[i]
            if q % d:
                grown = lcm(q, d)
                numerator[i] *= grown // q
                denominator[i] = q = grown
            numerator[i] += count * (q // d)
        self.run[who] = 0

    @property
    def histogram(self):
        """The whole episode's {distance: count}, distances in increasing order."""
        counts = self.counts_by_distance
        return {int(d): int(counts[d]) for d in self.np.flatnonzero(counts)}

    def person_exposures(self):
        """Per person, in person order: (nearest distance or None, the exposure's float)."""
        self._end_runs(self.np.flatnonzero(self.current >= 0))
        self.current[:] = -1
        nearest = [None if d == self.far else d for d in self.nearest.tolist()]
        return list(zip(nearest, map(truediv, self.numerator, self.denominator)))


def small_field(grid):
    """The field of a grid below ``TRANSFORM_MIN_CELLS``: numpy's minima (``KernelField``) in a process that
    has loaded numpy already (a campaign's worker does, as it measures many episodes), else the lowered field,
    which never imports it (``ember metrics`` on a small floor does not pay numpy's 0.1 s import).  The same
    integers either way (tests/metrics/test_exposure_fields.py)."""
    np = sys.modules.get("numpy")
    return LoweredField(grid) if np is None else KernelField(grid, np)


class FireExposure(Accumulator):
    def __init__(self, scenario, initial):
        self.grid = scenario.grid
        n = len(scenario.person_ids)
        large = self.grid.size >= TRANSFORM_MIN_CELLS
        self.field = TransformField(self.grid) if large else small_field(self.grid)
        self.tallies = CompactExposures(n, self.field.field.far) if large else PersonHistograms(n)
        self.any_fire = False
        self.states = 0
        self.states_without_fire = 0
        self._ignite([self.grid.index(row, col) for row, col in initial.burning])
        self._tally(initial)

    @property
    def histogram(self):
        """The episode's {distance: count} over every person-state with fire."""
        return self.tallies.histogram

    def person_exposures(self):
        """Per person, in person order: (nearest fire distance or None, fire exposure as a float);
        asked once, when the episode has ended."""
        return self.tallies.person_exposures()

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
        position = state.position
        if isinstance(self.field, LoweredField):
            dist = self.field.dist  # looked up as it goes: a list for a few people costs more
            self.tallies.tally(active, [dist[position[i]] for i in active])
            return
        self.tallies.tally(active, self.field.at([position[i] for i in active]))
