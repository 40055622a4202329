"""ExactProduct: replicate totals through float64 products equal Python integer sums, at every size of value."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.stats.exact import ExactProduct, float_numerators, limb_bits


def random_counts(rng, rows, sizes):
    """Count rows (replicates × keys) as a stratified bootstrap makes them: n_h draws within each stratum."""
    counts = np.zeros((rows, sum(sizes)))
    for r in range(rows):
        offset = 0
        for n in sizes:
            for _ in range(n):
                counts[r, offset + rng.randrange(n)] += 1
            offset += n
    return counts


def object_matrix(rows):
    matrix = np.empty((len(rows), len(rows[0])), dtype=object)
    matrix[:] = rows
    return matrix


@pytest.mark.parametrize("largest", [0, 1, 5000, 2**40, 2**50 + 3, 2**53 + 1, 2**62, 2**63 - 1])
def test_dense_and_by_stratum_totals_are_exact(largest):
    rng = random.Random(largest)
    sizes = [3, 1, 5, 2]
    keys = sum(sizes)
    values = object_matrix([[rng.randint(max(0, largest - 1000), largest) for _ in range(3)] for _ in range(keys)])
    counts = random_counts(rng, 40, sizes)
    dense = ExactProduct(values, keys).apply(counts.T.copy())
    offsets = [0, 3, 4, 9]
    by_stratum = ExactProduct(values, keys, groups=offsets).apply(counts.T.copy())
    for r in range(40):
        for j in range(3):
            expected = sum(int(counts[r, k]) * values[k, j] for k in range(keys))
            assert int(dense[r, j]) == expected
            for h, start in enumerate(offsets):
                stop = offsets[h + 1] if h + 1 < len(offsets) else keys
                assert int(by_stratum[r, h, j]) == sum(int(counts[r, k]) * values[k, j] for k in range(start, stop))
    wide = keys * largest >= 2**63
    assert (dense.dtype == object) == wide and (by_stratum.dtype == object) == wide


def test_limbs_keep_every_sum_below_two_to_the_53():
    for draws in (1, 2, 3, 1000, 10_000, 2**40):
        bits = limb_bits(draws)
        assert draws * (2**bits - 1) < 2**53 and draws * 2 ** (bits + 2) > 2**53  # at most one bit narrower


@settings(max_examples=100, deadline=None)
@given(
    floats=st.lists(
        st.one_of(
            st.floats(min_value=0, max_value=1e12, allow_nan=False),
            st.sampled_from([2.0**53, 1.0, 0.5, 1 / 3, 0.1, 5e-324, 2.0**-60]),
        ),
        min_size=1,
        max_size=6,
    ),
    seed=st.integers(0, 1000),
)
def test_exposure_sums_round_like_fsum(floats, seed):
    """Σ w_k · M_k / 2^T (int / int) is math.fsum over the multiset of drawn floats."""
    rng = random.Random(seed)
    column = np.empty((len(floats), 1), dtype=object)
    column[:, 0] = floats
    numerators, exponent = float_numerators(column)
    product = ExactProduct(numerators, len(floats))
    counts = random_counts(rng, 20, [len(floats)])
    sums = product.apply(counts.T.copy()).astype(object)
    for r in range(20):
        drawn = [f for k, f in enumerate(floats) for _ in range(int(counts[r, k]))]
        assert sums[r, 0] / (1 << exponent) == math.fsum(drawn)
