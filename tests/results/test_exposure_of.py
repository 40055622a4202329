"""exposure_of (ranking.md §2's x) against the plain sum of one Fraction per term."""

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from ember.results import exposure_of

distances = st.one_of(st.integers(1, 60), st.integers(1, 2**63 - 1))
histograms = st.dictionaries(distances, st.integers(0, 2**64), max_size=40)


@given(histograms)
def test_exposure_is_the_exact_sum(histogram):
    expected = sum((Fraction(count, d) for d, count in histogram.items()), Fraction(0))
    found = exposure_of(histogram)
    assert type(found) is Fraction
    assert (found.numerator, found.denominator) == (expected.numerator, expected.denominator)


def test_empty_and_zero_counts_are_zero():
    assert exposure_of({}) == Fraction(0) and type(exposure_of({})) is Fraction
    assert exposure_of({3: 0, 7: 0}) == Fraction(0)
    assert exposure_of({2: 1, 3: 1, 6: 1}) == Fraction(1)
