"""The exact Clopper–Pearson 95% interval, rounded outward to multiples of 10^-6 (statistics.md §5).

The Beta quantiles come from ``scipy.special.betaincinv`` (the inverse of
the regularized incomplete Beta function, which ``scipy.stats.beta.ppf``
computes too, without loading ``scipy.stats``: some 45 MB of a report's
peak; accurate to about 10^-12); only when an estimate lies within 10^-9 of a multiple j / 10^6 is
the rounding decided by the exact binomial tail at that rational, in
integers: P(X <= k; j / D) · D^n = Σ_{i<=k} C(n, i) j^i (D − j)^(n−i).
"""

import math

SCALE = 10**6  # intervals are written as multiples of 1 / SCALE
NEAR = 1e-9  # an estimate this close to a multiple of 1 / SCALE is decided exactly
TAIL = 40  # 95% two-sided: each tail holds 1/40


def cdf_numerator(n, k, j, scale=SCALE):
    """D^n · P(X <= k) for X ~ Binomial(n, j / D), exactly (an int); D = ``scale``, 0 <= j <= D.

    Terms by the recurrence t_{i+1} = t_i · (n − i) · j / ((i + 1)(D − j)),
    every division exact, so each step costs one small multiply and divide.
    """
    if k < 0:
        return 0
    if k >= n:
        return scale**n
    if j == scale:  # p = 1: X = n > k always
        return 0
    term = (scale - j) ** n
    total = term
    for i in range(k):
        term = term * (n - i) * j // ((i + 1) * (scale - j))
        total += term
    return total


def upper_tail_numerator(n, k, j, scale=SCALE):
    """D^n · P(X >= k) for X ~ Binomial(n, j / D): by symmetry, P(Y <= n − k) for Y ~ Binomial(n, 1 − j / D)."""
    return cdf_numerator(n, n - k, scale - j, scale)


def lower_at_least(n, k, j):
    """Whether q_lo >= j / 10^6 for k >= 1: P(X >= k) rises with p and is 1/40 at q_lo."""
    return TAIL * upper_tail_numerator(n, k, j) <= SCALE**n


def upper_at_most(n, k, j):
    """Whether q_hi <= j / 10^6 for k < n: P(X <= k) falls with p and is 1/40 at q_hi."""
    return TAIL * cdf_numerator(n, k, j) <= SCALE**n


def _nearest_multiple(estimate):
    """(j, near): the multiple j of 1 / SCALE closest to ``estimate``, and whether it is within ``NEAR``."""
    j = min(max(round(estimate * SCALE), 0), SCALE)
    return j, abs(estimate - j / SCALE) < NEAR


def lower_bound(n, k, estimate):
    """⌊10^6 · q_lo⌋ for 1 <= k <= n, from a q_lo estimate accurate to 10^-12."""
    j, near = _nearest_multiple(estimate)
    if near:
        return j if lower_at_least(n, k, j) else j - 1
    return min(max(math.floor(estimate * SCALE), 0), SCALE)


def upper_bound(n, k, estimate):
    """⌈10^6 · q_hi⌉ for 0 <= k < n, from a q_hi estimate accurate to 10^-12."""
    j, near = _nearest_multiple(estimate)
    if near:
        return j if upper_at_most(n, k, j) else j + 1
    return min(max(math.ceil(estimate * SCALE), 0), SCALE)


def clopper_pearson(k, n):
    """[lo, hi]: the Clopper–Pearson 95% interval for k of n, rounded outward to multiples of 10^-6, as floats.

    Each end is the float nearest its decimal (j / 10^6, an exact int / int
    division); 0.0 for k = 0 and 1.0 for k = n.  Needs scipy (the ``stats`` extra).
    """
    from scipy.special import betaincinv

    if not 0 <= k <= n or n < 1:
        raise ValueError(f"expected 0 <= k <= n and n >= 1, got k = {k}, n = {n}")
    low = 0 if k == 0 else lower_bound(n, k, float(betaincinv(k, n - k + 1, 1 / TAIL)))
    high = SCALE if k == n else upper_bound(n, k, float(betaincinv(k + 1, n - k, 1 - 1 / TAIL)))
    return [low / SCALE, high / SCALE]
