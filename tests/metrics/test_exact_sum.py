"""``metrics.report.exact_sum``: one common denominator gives the sum that adding Fractions one by one gives."""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.metrics.report import exact_sum

TERMS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 2000)), max_size=60)


@settings(max_examples=500, deadline=None)
@given(TERMS)
def test_exact_sum_is_the_fraction_sum(terms):
    want = sum((Fraction(n, d) for n, d in terms), Fraction(0))
    got = exact_sum(terms)
    assert type(got) is Fraction and got == want and got.denominator == want.denominator
    assert float(got) == float(want)


def test_exact_sum_of_nothing_is_zero():
    assert exact_sum([]) == 0 and type(exact_sum([])) is Fraction
