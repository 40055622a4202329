"""The fire's decision per draw is rule 4's integer comparison u * D < N * 2^64, at its boundary too.

``FireSpread.ignitions`` compares each draw's digest with a precomputed
limit (padded to the digest's 32 bytes) instead of making the integer u;
with p = N / 2^64 and N = u or u + 1 the draw sits exactly at the limit.
"""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from ember.grid.floor import Grid
from ember.sim.fire import TWO_64, FireSpread, fire_draw


def ignites(seed, step, numerator, denominator):
    """Whether cell [0, 1] of a 1 x 2 floor ignites at ``step`` from the fire at [0, 0]."""
    grid = Grid(1, 2, [])
    fire = FireSpread(grid, seed, numerator, denominator)
    burning = bytearray(b"\x01\x00")
    fire.burn([0], burning)
    return fire.ignitions(step) == [1]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 10**6), st.integers(-1, 1))
def test_a_draw_at_the_limit_follows_the_integer_rule(seed, step, offset):
    u = fire_draw(seed, step, 0, 1, "west")
    numerator = min(max(u + offset, 0), TWO_64 - 1)  # p = N / 2^64, just below, at or above u / 2^64
    assert ignites(seed, step, numerator, TWO_64) is (u * TWO_64 < numerator * TWO_64)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 10**6), st.fractions(0, 1).filter(lambda p: 0 < p < 1))
def test_any_probability_follows_the_integer_rule(seed, step, p):
    p = Fraction(p)
    u = fire_draw(seed, step, 0, 1, "west")
    assert ignites(seed, step, p.numerator, p.denominator) is (u * p.denominator < p.numerator * TWO_64)
