"""``CompactExposures`` (large floors: runs in numpy arrays, an exact integer fraction a person) against a
batch recomputation of every person's histogram, and against the dict tallies of small floors.

Random episodes of person-states: people leave the active list for good, a
person's distance stays put for runs of steps, moves by small steps or
jumps, comes back to distances it held before and takes distances whose
lcm grows; the active list is sometimes the same object as the step
before (as the simulator hands it when nobody resolved) and sometimes a
new one.
"""

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.metrics.exposure import CompactExposures, PersonHistograms

FAR = 40


@st.composite
def episodes(draw):
    people = draw(st.integers(1, 6))
    steps = draw(st.integers(1, 30))
    active = list(range(people))
    distance = [draw(st.integers(1, FAR - 1)) for _ in range(people)]
    episode = []
    for _ in range(steps):
        if draw(st.booleans()) and len(active) > 1 and draw(st.integers(0, 4)) == 0:
            gone = draw(st.sampled_from(active))
            active = [i for i in active if i != gone]  # a new list: somebody resolved
        for i in active:
            move = draw(st.sampled_from([0, 0, 0, -1, 1, -2, 2, "jump"]))
            if move == "jump":
                distance[i] = draw(st.integers(1, FAR - 1))
            else:
                distance[i] = min(FAR - 1, max(1, distance[i] + move))
        episode.append((active, [distance[i] for i in active]))
    return people, episode


def batch(people, episode):
    """Each person's histogram from every state at once, then its nearest distance and exact exposure."""
    histograms = [{} for _ in range(people)]
    for active, distances in episode:
        for i, d in zip(active, distances):
            histograms[i][d] = histograms[i].get(d, 0) + 1
    total = {}
    for histogram in histograms:
        for d, count in histogram.items():
            total[d] = total.get(d, 0) + count
    results = [
        (min(h) if h else None, float(sum((Fraction(count, d) for d, count in h.items()), Fraction(0))))
        for h in histograms
    ]
    return dict(sorted(total.items())), results


@settings(max_examples=300, deadline=None)
@given(episodes())
def test_compact_exposures_are_the_batch_recomputation(case):
    people, episode = case
    compact, plain = CompactExposures(people, FAR), PersonHistograms(people)
    for active, distances in episode:
        compact.tally(active, np.array(distances, dtype=np.int16))  # the field's own dtype on large grids
        plain.tally(active, distances)
    histogram, results = batch(people, episode)
    assert compact.histogram == histogram
    assert dict(sorted(plain.histogram.items())) == histogram
    got = compact.person_exposures()
    assert got == results == plain.person_exposures()
    assert all(type(d) in (int, type(None)) and type(x) is float for d, x in got)
    assert all(type(count) is int for count in compact.histogram.values())


def test_an_exposure_whose_denominator_grows_stays_exact():
    compact = CompactExposures(1, 2**15)
    distances = [7, 7, 9, 11, 13, 16, 3, 17, 19, 23, 7, 29, 31, 25, 27, 32]
    for d in distances:
        compact.tally([0], np.array([d]))
    exact = sum((Fraction(1, d) for d in distances), Fraction(0))
    assert compact.person_exposures() == [(3, float(exact))]
    assert compact.denominator[0] == exact.denominator * (compact.denominator[0] // exact.denominator)
