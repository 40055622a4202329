"""The exact two-sided sign test of statistics.md §6, as an exact rational rounded once."""

from fractions import Fraction


def sign_test_p_value(above_better, below_better):
    """p = min(1, 2 · Σ_{i=0..min(m,n)} C(m+n, i) / 2^(m+n)), a float; 1.0 when m + n = 0.

    Binomial coefficients by C(N, i+1) = C(N, i) · (N − i) / (i + 1) (every
    division exact); the sum stays an integer until the one rounding.
    """
    trials = above_better + below_better
    if trials == 0:
        return 1.0
    coefficient = 1
    tail = 0
    for i in range(min(above_better, below_better) + 1):
        tail += coefficient
        coefficient = coefficient * (trials - i) // (i + 1)
    return float(min(Fraction(1), Fraction(2 * tail, 1 << trials)))
