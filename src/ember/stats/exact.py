"""Exact replicate totals with floating-point matrix products (statistics.md §3, "exact integers").

A replicate's total of a per-episode value v is Σ_k w_k · v_k, where w_k is
how often the replicate drew key k (Σ_k w_k = |K|).  The products run in
float64 through BLAS, and are exact by construction, not by luck:

- Every v_k (a non-negative integer of any size) is split into limbs of
  ``bits`` bits, v_k = Σ_l v_kl · 2^(l·bits), with ``bits`` chosen so that
  |K| · 2^bits <= 2^53.
- For one limb, every partial sum of Σ_k w_k · v_kl is a non-negative
  integer no larger than the whole sum, which is below |K| · 2^bits <= 2^53.
  Integers below 2^53 are floats exactly, so every addition and
  multiplication (fused or not, in any order BLAS chooses) is exact.
- The limb totals are then joined exactly: in int64 when |K| · max v < 2^63
  (no term or sum can overflow), else as Python integers (an object array).

Values below 2^53 / |K| (every realistic count and time) need one limb: one
BLAS product per block of replicates, and a cast.
"""

import numpy as np

FLOAT_EXACT_BITS = 53
INT64_LIMIT = 1 << 63


def limb_bits(draws):
    """A limb width (within one bit of the widest) whose sums over ``draws`` draws stay below 2^53."""
    bits = FLOAT_EXACT_BITS - draws.bit_length()
    if bits < 1:  # would need more than 2^52 episode keys in memory
        raise ValueError(f"{draws} draws per replicate is beyond exact float64 sums")
    return bits


class ExactProduct:
    """w ↦ w · V exactly for count vectors w (each summing to ``draws``) and a non-negative integer matrix V.

    ``values`` is V as a 2-D numpy object array of Python ints (keys × columns).
    With ``groups`` (the first key of each stratum, ascending), V is laid out
    block-diagonally: column (h, j) holds V[:, j] on the keys of stratum h and
    0 elsewhere, so the product gives each stratum's part of each column's
    total; it is then a sparse matrix (|K| · columns non-zeros, not |K| · H · columns).
    """

    def __init__(self, values, draws, groups=None):
        self.draws = draws
        self.keys, self.columns = values.shape
        largest = max((int(v) for v in values.flat), default=0)
        self.bits = limb_bits(draws)
        self.limbs = max(1, -(-largest.bit_length() // self.bits))
        self.bound = draws * largest  # no total exceeds it
        self.wide = self.bound >= INT64_LIMIT  # totals need Python integers
        self.groups = None if groups is None else np.asarray(groups, dtype=np.int64)
        mask = (1 << self.bits) - 1
        self.matrices = []
        for limb in range(self.limbs):
            part = ((values >> (limb * self.bits)) & mask).astype(np.float64)
            # Transposed (columns × keys): the products below are matrix @ counts, counts being keys × replicates.
            self.matrices.append(np.ascontiguousarray(part.T) if groups is None else self._block_diagonal(part))

    def _block_diagonal(self, part):
        from scipy import sparse

        strata = len(self.groups)
        sizes = np.diff(np.append(self.groups, self.keys))
        stratum = np.repeat(np.arange(strata), sizes)
        rows = np.repeat(np.arange(self.keys), self.columns)
        cols = (stratum[:, None] * self.columns + np.arange(self.columns)[None, :]).ravel()
        # Transposed (columns × keys) in CSR: sparse @ dense is scipy's fast product.
        return sparse.csr_matrix((part.ravel(), (cols, rows)), shape=(strata * self.columns, self.keys))

    def totals(self, counts):
        """The exact totals for the count columns ``counts`` (float64, keys × replicates), columns × replicates.

        Counts come keys × replicates so that neither product needs a
        transposed copy of them (dense BLAS and scipy's CSR @ dense both read
        them as stored), and the totals come out column by column, the layout
        the replicate values are kept in.  int64 unless a total could reach
        2^63, then Python ints.  With ``groups`` the rows are (stratum, column)
        pairs, stratum major.
        """
        total = None
        for limb, matrix in enumerate(self.matrices):
            part = np.asarray(matrix @ counts).astype(np.int64)
            if self.wide:
                part = part.astype(object)
            part <<= limb * self.bits
            total = part if total is None else total + part
        return total

    def apply(self, counts):
        """``totals`` transposed: replicates × columns (replicates × strata × columns with ``groups``)."""
        total = self.totals(counts).T
        if self.groups is not None:
            total = total.reshape(counts.shape[1], len(self.groups), self.columns)
        return total


def storage_dtype(bound):
    """The narrowest of int16, int32, int64 and Python ints (object) holding every integer −``bound`` <= v <= ``bound``.

    (Signed: a difference of two totals in [0, bound] fits the same type.)
    """
    if bound < 1 << 15:
        return np.int16
    if bound < 1 << 31:
        return np.int32
    return np.int64 if bound < INT64_LIMIT else object


def float_numerators(floats):
    """Exact integers M and an exponent T with float(f) = M / 2^T for every f of ``floats`` (an object array).

    A finite float is a dyadic rational num / 2^t (``as_integer_ratio``); over
    the common denominator 2^T, T the largest t, each is an integer.  Then a
    sum of such floats over any multiset of keys is Σ w_k · M_k / 2^T exactly,
    and dividing that Python integer by 2^T rounds it correctly (CPython's
    int / int), which is what ``math.fsum`` returns for the same multiset.
    """
    ratios = [f.as_integer_ratio() for f in floats.flat]
    exponent = max((den.bit_length() - 1 for _, den in ratios), default=0)
    numerators = np.empty(floats.shape, dtype=object)
    numerators.flat[:] = [num << (exponent - (den.bit_length() - 1)) for num, den in ratios]
    return numerators, exponent
