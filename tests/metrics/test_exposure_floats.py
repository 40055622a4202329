"""``report.exposure_floats``: every person's exposure over one common denominator.

Each float must be exactly ``float`` of the exact Fraction sum of
count / d over the person's histogram (the reference below adds Fractions
one by one), whatever the mix of histograms: empty ones, large distances,
counts that make the sum land next to a rounding boundary.
"""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.metrics.report import exposure_floats

histograms = st.dictionaries(st.integers(1, 2_000), st.integers(1, 10**6), max_size=40)


def reference(histogram):
    return float(sum((Fraction(count, d) for d, count in histogram.items()), Fraction(0)))


@settings(max_examples=400, deadline=None)
@given(st.lists(histograms, max_size=12))
def test_each_float_is_the_float_of_the_exact_sum(people):
    got = exposure_floats(people)
    assert [type(x) for x in got] == [float] * len(people)
    assert got == [reference(h) for h in people]


def test_sums_next_to_a_rounding_boundary():
    # 1/3 + 1/3 + 1/3 is 1 exactly; 2^53 / 1 + 1/2 is a tie rounded to even.
    assert exposure_floats([{3: 3}, {1: 2**53, 2: 1}, {}]) == [1.0, float(2**53), 0.0]
