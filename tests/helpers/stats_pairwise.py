"""The bootstrap as ``ember.stats.bootstrap`` computed it with pairwise comparisons, kept as a reference.

Replicate ranks and pair orders here come from m × |P| × |P| comparisons of
every policy's tuple with every other's, and X* always from Python integer
divisions: direct, but memory and time grow with |P|^2.  The library now
ranks by sorting; the tests swap this ``resample`` in and compare the bytes
of ``statistics.json`` (tests/stats/test_against_pairwise.py).
"""

import numpy as np
from threadpoolctl import threadpool_limits

from ember.stats.exact import ExactProduct, float_numerators, storage_dtype
from ember.stats.splitmix import splitmix64_block

#: Stream values drawn per block (8 MiB of uint64); a block holds BLOCK_DRAWS // |K| replicates (at least 1).
BLOCK_DRAWS = 1 << 20


class Strata:
    """The strata of statistics.md §2: stratum h holds keys o_h … o_h + n_h − 1 of K."""

    def __init__(self, sizes):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes)[:-1])).astype(np.int64)
        self.keys = int(self.sizes.sum())
        # Per key position j of a replicate: its stratum's size and first key.
        self.modulus = np.repeat(self.sizes, self.sizes).astype(np.uint64)
        self.first_key = np.repeat(self.offsets, self.sizes).astype(np.uint64)


def draw_counts(strata, seed, first, stop):
    """How often replicates ``first`` … ``stop − 1`` draw each key: float64, |K| × (stop − first).

    Replicate b's draw at position o_h + j is key o_h + (z(b·|K| + o_h + j) mod n_h)
    of K (statistics.md §3), both operands of the remainder ``uint64``.  The
    counts are laid out key by key (column b − first is replicate b), the
    layout the products read without a transposed copy.
    """
    rows, keys = stop - first, strata.keys
    draws = splitmix64_block(seed, first * keys, rows * keys).reshape(rows, keys)
    np.remainder(draws, strata.modulus, out=draws)
    draws += strata.first_key
    draws *= np.uint64(rows)  # bin key · rows + replicate: key-major counts
    draws += np.arange(rows, dtype=np.uint64)[:, None]
    counts = np.bincount(draws.reshape(-1).view(np.int64), minlength=rows * keys)
    return counts.reshape(keys, rows).astype(np.float64)


def lexicographic_less(keys):
    """less[b, i, j]: policy i's tuple is below policy j's in replicate b; ``keys``: m × |P| arrays, major first."""
    less = np.zeros(keys[0].shape + keys[0].shape[-1:], dtype=bool)
    equal = np.ones_like(less)
    for key in keys:
        mine, theirs = key[:, :, None], key[:, None, :]
        less |= equal & (mine < theirs)
        equal &= mine == theirs
    return less


class ReplicateValues:
    """Per replicate (rows) and ranked policy (columns, in ranking order): totals, stratum casualties, ranks.

    ``totals`` maps casualties, stranded, person_time, evacuated to B × |P|
    arrays; ``stratum_casualties`` is B × H × |P|; ``ranks`` B × |P|;
    ``orders`` (|P| − 1) × 3 counts of replicates in which the pair (j, j + 1)
    is above, equal, below.
    """

    def __init__(self, replicates, policies, strata, products):
        def empty(shape, product):  # kept narrow: these arrays are the memory that grows with B
            return np.empty(shape, dtype=storage_dtype(product.bound))

        self.totals = {name: empty((replicates, policies), products["dense"]) for name in DENSE_TOTALS}
        self.totals["casualties"] = empty((replicates, policies), products["casualties"])
        self.stratum_casualties = empty((replicates, len(strata.sizes), policies), products["casualties"])
        self.ranks = np.empty((replicates, policies), dtype=storage_dtype(policies))
        self.orders = np.zeros((max(policies - 1, 0), 3), dtype=np.int64)


DENSE_TOTALS = ("stranded", "person_time", "evacuated")


class ExposureSums:
    """X* of tied replicates: the correctly rounded sum of float(x) over the drawn keys, per policy."""

    def __init__(self, exposures, draws):
        numerators, self.exponent = float_numerators(exposures)
        self.product = ExactProduct(numerators, draws)

    def apply(self, counts):
        sums = self.product.apply(counts).astype(object)
        return (sums / (1 << self.exponent)).astype(np.float64)  # int / int: correctly rounded


def resample(values, exposures, sizes, replicates, seed, progress=None):
    """Run the bootstrap: ``ReplicateValues`` of ``replicates`` replicates from stream seed ``seed``.

    ``values`` maps casualties, stranded, person_time, evacuated to |K| × |P|
    object arrays of Python ints (keys in K order, policies in ranking
    order); ``exposures()`` returns the |K| × |P| object array of float(x),
    called only once a replicate has a tie in (C*, S*, P*).  ``sizes`` are the
    strata's n_h.  ``progress(done)`` is called after each block.
    """
    strata = Strata(sizes)
    keys, policies = values["casualties"].shape
    products = {
        "dense": ExactProduct(np.hstack([values[name] for name in DENSE_TOTALS]), keys),
        "casualties": ExactProduct(values["casualties"], keys, groups=strata.offsets),
    }
    result = ReplicateValues(replicates, policies, strata, products)
    block = max(1, BLOCK_DRAWS // keys)
    # One BLAS thread: the products are skinny (a few columns per policy) and come by the hundred;
    # threaded OpenBLAS spins between them and slowed the whole bootstrap 2-3x on 2 cores
    # (benchmarks/HISTORY.md, bench_stats).  The limit is lifted when the resampling ends.
    with threadpool_limits(limits=1, user_api="blas"):
        _resample_blocks(result, products, strata, values, exposures, seed, replicates, block, progress)
    return result


def _resample_blocks(result, products, strata, values, exposures, seed, replicates, block, progress):
    keys, policies = values["casualties"].shape
    exposure = None
    upper = np.triu(np.ones((policies, policies), dtype=bool), k=1)
    for first in range(0, replicates, block):
        stop = min(replicates, first + block)
        counts = draw_counts(strata, seed, first, stop)
        dense = products["dense"].apply(counts)
        by_stratum = products["casualties"].apply(counts)
        casualties = by_stratum.sum(axis=1)
        stranded, person_time, evacuated = (dense[:, i * policies : (i + 1) * policies] for i in range(3))
        tuples = [casualties, stranded, person_time]
        same = np.ones((stop - first, policies, policies), dtype=bool)
        for key in tuples:
            same &= key[:, :, None] == key[:, None, :]
        tied = (same & upper).any(axis=(1, 2))
        exposure_star = np.zeros((stop - first, policies), dtype=np.float64)
        if tied.any():
            if exposure is None:
                exposure = ExposureSums(exposures(), keys)
            exposure_star[tied] = exposure.apply(np.ascontiguousarray(counts[:, tied]))
        less = lexicographic_less(tuples + [exposure_star])
        result.ranks[first:stop] = 1 + less.sum(axis=1)  # competition rank: 1 + policies strictly ahead
        for j in range(policies - 1):
            above, below = less[:, j, j + 1], less[:, j + 1, j]
            result.orders[j] += (int(above.sum()), int((~above & ~below).sum()), int(below.sum()))
        for name, total in zip(DENSE_TOTALS, (stranded, person_time, evacuated)):
            result.totals[name][first:stop] = total
        result.totals["casualties"][first:stop] = casualties
        result.stratum_casualties[first:stop] = by_stratum
        if progress is not None:
            progress(stop)


def resample_policy_major(values, exposures, sizes, replicates, seed, progress=None):
    """``resample``'s values laid out as the library keeps them now: policy-major (replicates last)."""
    result = resample(values, exposures, sizes, replicates, seed, progress)
    result.totals = {name: np.ascontiguousarray(total.T) for name, total in result.totals.items()}
    result.stratum_casualties = np.ascontiguousarray(result.stratum_casualties.transpose(1, 2, 0))
    result.ranks = np.ascontiguousarray(result.ranks.T)
    return result
