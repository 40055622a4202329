"""The stratified paired bootstrap of statistics.md §2–3, vectorised in blocks of replicates.

A block of m replicates draws m · |K| stream values at once
(``splitmix64_block``), reduces each modulo its stratum's size, and counts
how often each key was drawn: a |K| × m matrix of counts.  Every total of
the block is then one exact matrix product (``ExactProduct``); the ranks
come from one sort of each replicate's |P| tuples (``replicate_ranks``), so
time grows as |P| log |P| and memory as |P|, never |P|^2; the pair orders
compare neighbours' ranks.  Memory: the block's arrays (at most about
``BLOCK_DRAWS`` and ``BLOCK_VALUES`` values each, whatever B is) and the
B · |P| · (H + 5) replicate values kept for the intervals.

Exposure breaks ties only: in the replicates of a block where two policies
have equal (C*, S*, P*) (runs of equal tuples in the sort), X* is the exact
sum of float(x) over the drawn keys, correctly rounded (``float_numerators``):
the same value ``math.fsum`` gives for that multiset.
"""

import numpy as np
from threadpoolctl import threadpool_limits

from .exact import INT64_LIMIT, ExactProduct, float_numerators, storage_dtype
from .splitmix import splitmix64_block

#: Stream values drawn per block (8 MiB of uint64); a block holds BLOCK_DRAWS // |K| replicates (at least 1).
BLOCK_DRAWS = 1 << 20
#: Replicate values per block: a block also holds at most BLOCK_VALUES // (|P| · (H + 8)) replicates, so that
#: its totals, per-stratum casualties and ranks stay a few tens of MB however many policies there are.
BLOCK_VALUES = 1 << 21
#: 2^-T is a normal float for T <= 1022: then scaling an exact sum by it is exact.
FLOAT_MIN_EXPONENT = 1022


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


def replicate_ranks(keys):
    """Competition ranks within each replicate (row) of the tuples whose parts are ``keys`` (m × |P| each, major first).

    One sort per row (``lexsort`` of the parts, or ``argsort`` of a single
    part); a policy's rank is 1 + its position's start of the run of equal
    tuples in sorted order: 1 + the number of policies strictly below it.
    Returns (ranks, rows with two equal tuples).
    """
    order = np.argsort(keys[0], axis=1, kind="stable") if len(keys) == 1 else np.lexsort(keys[::-1], axis=1)
    rows, columns = order.shape
    starts = np.zeros((rows, columns), dtype=bool)
    starts[:, 0] = True
    for key in keys:
        ordered = np.take_along_axis(key, order, axis=1)
        starts[:, 1:] |= ordered[:, 1:] != ordered[:, :-1]
    first = np.where(starts, np.arange(columns, dtype=np.int64), 0)
    np.maximum.accumulate(first, axis=1, out=first)
    ranks = np.empty((rows, columns), dtype=np.int64)
    np.put_along_axis(ranks, order, first + 1, axis=1)
    return ranks, ~starts.all(axis=1)


def order_keys(casualties, stranded, person_time, bounds):
    """(C*, S*, P*) as sortable parts: one int64 code when (C + 1)(S + 1)(P + 1) < 2^63 for the bounds, else three."""
    c, s, p = bounds
    if (c + 1) * (s + 1) * (p + 1) < INT64_LIMIT and all(
        a.dtype == np.int64 for a in (casualties, stranded, person_time)
    ):
        return [(casualties * (s + 1) + stranded) * (p + 1) + person_time]
    return [casualties, stranded, person_time]


class ReplicateValues:
    """Per ranked policy (rows, in ranking order) and replicate (columns): totals, stratum casualties, ranks.

    Policy-major, so that a policy's B values are contiguous (the
    intervals partition them in place, the pair differences subtract two
    rows): ``totals`` maps casualties, stranded, person_time, evacuated to
    |P| × B arrays; ``stratum_casualties`` is H × |P| × B; ``ranks`` |P| × B;
    ``orders`` (|P| − 1) × 3 counts of replicates in which the pair (j, j + 1)
    is above, equal, below.
    """

    def __init__(self, replicates, policies, strata, products):
        def empty(shape, bound):  # kept narrow: these arrays are the memory that grows with B
            return np.empty(shape, dtype=storage_dtype(bound))

        self.totals = {name: empty((policies, replicates), products["dense"].bound) for name in DENSE_TOTALS}
        self.totals["casualties"] = empty((policies, replicates), products["casualties"].bound)
        self.stratum_casualties = empty((len(strata.sizes), policies, replicates), products["casualties"].bound)
        self.ranks = np.empty((policies, replicates), dtype=storage_dtype(policies))
        self.orders = np.zeros((max(policies - 1, 0), 3), dtype=np.int64)


DENSE_TOTALS = ("stranded", "person_time", "evacuated")
ORDER_TOTALS = ("casualties", "stranded", "person_time")


class ExposureSums:
    """X* of tied replicates: the correctly rounded sum of float(x) over the drawn keys, per policy."""

    def __init__(self, exposures, draws):
        numerators, self.exponent = float_numerators(exposures)
        self.product = ExactProduct(numerators, draws)

    def apply(self, counts):
        product = self.product
        if product.limbs <= 2 and self.exponent <= FLOAT_MIN_EXPONENT:
            # Each limb's sum is an exact float (below 2^53); the high one times 2^bits is exact too.  One float
            # addition rounds their exact sum correctly (to nearest, ties to even, as int / int does), and the
            # scaling by 2^-T is exact while the result is a normal float, which T <= 1022 ensures for any
            # non-zero sum (at least 1 / 2^T).
            parts = [np.asarray(matrix @ counts).T for matrix in product.matrices]
            total = parts[0] if len(parts) == 1 else parts[1] * float(1 << product.bits) + parts[0]
            return np.ldexp(total, -self.exponent)
        sums = product.apply(counts).astype(object)
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
    block = max(1, min(BLOCK_DRAWS // keys, BLOCK_VALUES // (policies * (len(strata.sizes) + 8))))
    # One BLAS thread: the products are skinny (a few columns per policy) and come by the hundred;
    # threaded OpenBLAS spins between them and slowed the whole bootstrap 2-3x on 2 cores
    # (benchmarks/HISTORY.md, bench_stats).  The limit is lifted when the resampling ends.
    with threadpool_limits(limits=1, user_api="blas"):
        _resample_blocks(result, products, strata, values, exposures, seed, replicates, block, progress)
    return result


def _resample_blocks(result, products, strata, values, exposures, seed, replicates, block, progress):
    keys, policies = values["casualties"].shape
    strata_count = len(strata.sizes)
    # Each total's own bound (|K| times its largest per-key value): the tighter they are, the more often
    # (C*, S*, P*) packs into one int64 code.
    bounds = tuple(keys * max((int(v) for v in values[name].flat), default=0) for name in ORDER_TOTALS)
    stratum_rows = result.stratum_casualties.reshape(strata_count * policies, replicates)
    exposure = None
    for first in range(0, replicates, block):
        stop = min(replicates, first + block)
        counts = draw_counts(strata, seed, first, stop)
        dense = products["dense"].totals(counts)  # 3|P| × m: stranded, person_time, evacuated
        by_stratum = products["casualties"].totals(counts)  # H|P| × m, stratum major
        stratum_rows[:, first:stop] = by_stratum
        casualties = by_stratum.reshape(strata_count, policies, stop - first).sum(axis=0)
        stranded, person_time, evacuated = (dense[i * policies : (i + 1) * policies] for i in range(3))
        # Replicate by replicate (rows of the transposed views): ranks of (C*, S*, P*), then of (C*, S*, P*, X*)
        # in the replicates where two policies tie without X*.
        parts = order_keys(casualties.T, stranded.T, person_time.T, bounds)
        ranks, tied = replicate_ranks(parts)
        if tied.any():
            if exposure is None:
                exposure = ExposureSums(exposures(), keys)
            exposure_star = exposure.apply(np.ascontiguousarray(counts[:, tied]))
            ranks[tied] = replicate_ranks([part[tied] for part in parts] + [exposure_star])[0]
        result.ranks[:, first:stop] = ranks.T
        # Competition ranks order two policies as their tuples do: fewer policies are below the smaller one.
        above, below = ranks[:, :-1] < ranks[:, 1:], ranks[:, :-1] > ranks[:, 1:]  # pair (j, j + 1)
        above_count, below_count = above.sum(axis=0), below.sum(axis=0)
        result.orders[:, 0] += above_count
        result.orders[:, 1] += (stop - first) - above_count - below_count
        result.orders[:, 2] += below_count
        for name, total in zip(DENSE_TOTALS, (stranded, person_time, evacuated)):
            result.totals[name][:, first:stop] = total
        result.totals["casualties"][:, first:stop] = casualties
        if progress is not None:
            progress(stop)
