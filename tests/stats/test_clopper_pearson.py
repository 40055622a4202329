"""Clopper–Pearson rounded outward (statistics.md §5) against a binary search on the exact binomial CDF."""

import itertools
import subprocess
import sys
from fractions import Fraction

import pytest

from ember.stats.clopper_pearson import cdf_numerator, clopper_pearson, lower_bound, upper_bound

from helpers.stats_reference import binomial_cdf
from helpers.stats_reference import clopper_pearson as reference_clopper_pearson

SMALL = [(k, n) for n in range(1, 13) for k in range(n + 1)]
LARGER = [(0, 40), (1, 40), (20, 40), (39, 40), (40, 40), (3, 72), (71, 72), (5, 150), (149, 150)]


@pytest.mark.parametrize(("k", "n"), SMALL + LARGER)
def test_against_bisection(k, n):
    assert clopper_pearson(k, n) == reference_clopper_pearson(k, n)


def test_spec_example_five_episodes_no_casualty():
    assert clopper_pearson(0, 5) == [0.0, 0.521824]  # q_hi = 1 - 0.025^(1/5) = 0.5218237...


def test_ends_exactly_on_a_multiple():
    # n = 1: q_lo = 1/40 and q_hi = 39/40 exactly, multiples of 10^-6; outward rounding keeps them.
    assert clopper_pearson(1, 1) == [0.025, 1.0]
    assert clopper_pearson(0, 1) == [0.0, 0.975]


@pytest.mark.parametrize(("k", "n"), [(2, 6), (7, 19), (1, 72), (30, 31)])
def test_estimates_near_a_multiple_are_decided_exactly(k, n):
    """An estimate within 10^-9 of j / 10^6 on the wrong side still gives the exact floor / ceiling."""
    low, high = reference_clopper_pearson(k, n)
    low_j, high_j = round(low * 10**6), round(high * 10**6)
    for shift in (-9e-10, -1e-12, 0.0, 1e-12, 9e-10):
        assert lower_bound(n, k, low_j / 10**6 + shift) == low_j  # q_lo in [low_j, low_j + 1) / 10^6
        assert lower_bound(n, k, (low_j + 1) / 10**6 + shift) == low_j
        assert upper_bound(n, k, high_j / 10**6 + shift) == high_j  # q_hi in (high_j - 1, high_j] / 10^6
        assert upper_bound(n, k, (high_j - 1) / 10**6 + shift) == high_j


@pytest.mark.parametrize(
    ("n", "k", "j"), list(itertools.product([1, 5, 13], [0, 1, 4, 13], [0, 1, 250000, 999999, 10**6]))
)
def test_cdf_numerator_is_the_exact_cdf(n, k, j):
    expected = binomial_cdf(n, min(k, n), Fraction(j, 10**6)) * 10 ** (6 * n)
    assert Fraction(cdf_numerator(n, k, j)) == expected


def test_large_n_exact_decision_stays_exact():
    # |K| = 10,000 (the benchmark's size): the exact tail is an integer of about 200,000 bits.
    n, k = 10_000, 17
    low, high = clopper_pearson(k, n)
    j = round(low * 10**6)
    assert lower_bound(n, k, j / 10**6) == j and lower_bound(n, k, (j + 1) / 10**6) == j
    assert low <= k / n <= high


@pytest.mark.parametrize("bad", [(-1, 5), (6, 5), (0, 0)])
def test_bad_counts(bad):
    with pytest.raises(ValueError, match="expected 0 <= k <= n"):
        clopper_pearson(*bad)


def test_the_interval_loads_no_scipy_stats():
    # scipy.stats is some 45 MB of a report's peak; the interval needs only the inverse incomplete Beta.
    code = (
        "import sys; from ember.stats.clopper_pearson import clopper_pearson; from ember.stats import require; "
        "require(); print(clopper_pearson(3, 20), 'scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == f"{reference_clopper_pearson(3, 20)} False\n"
