"""Replicate ranks by sorting (ember.stats.bootstrap) against competition ranks counted directly."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ember.stats.bootstrap import order_keys, replicate_ranks


@st.composite
def tuples(draw):
    rows, columns, parts = draw(st.integers(1, 6)), draw(st.integers(1, 7)), draw(st.integers(1, 4))
    top = draw(st.sampled_from([1, 3, 2**40]))
    cells = st.lists(st.integers(0, top), min_size=rows * columns, max_size=rows * columns)
    return [np.array(draw(cells), dtype=np.int64).reshape(rows, columns) for _ in range(parts)]


def direct(parts):
    rows, columns = parts[0].shape
    ranks, tied = np.zeros((rows, columns), dtype=np.int64), np.zeros(rows, dtype=bool)
    for b in range(rows):
        row = [tuple(int(part[b, i]) for part in parts) for i in range(columns)]
        ranks[b] = [1 + sum(other < mine for other in row) for mine in row]
        tied[b] = len(set(row)) < columns
    return ranks, tied


@given(tuples())
def test_ranks_and_ties_are_the_direct_ones(parts):
    ranks, tied = replicate_ranks(parts)
    expected_ranks, expected_tied = direct(parts)
    assert ranks.dtype == np.int64 and ranks.tolist() == expected_ranks.tolist()
    assert tied.tolist() == expected_tied.tolist()


@given(tuples(), st.booleans())
def test_wide_parts_rank_as_python_ints(parts, as_objects):
    """Object arrays (totals beyond int64) sort by the same rules."""
    shifted = [(part.astype(object) + 2**70) if as_objects else part for part in parts]
    assert replicate_ranks(shifted)[0].tolist() == direct(parts)[0].tolist()


@given(st.data())
def test_packed_code_orders_as_the_three_parts(data):
    bounds = tuple(data.draw(st.sampled_from([0, 1, 5, 1000])) for _ in range(3))
    shape = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6)))
    parts = [
        np.array(data.draw(st.lists(st.integers(0, b), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1])))
        .astype(np.int64)
        .reshape(shape)
        for b in bounds
    ]
    packed = order_keys(*parts, bounds)
    assert len(packed) == 1
    assert replicate_ranks(packed)[0].tolist() == direct(parts)[0].tolist()


def test_totals_too_large_to_pack_stay_three_parts():
    parts = [np.zeros((1, 2), dtype=np.int64)] * 3
    assert len(order_keys(*parts, (2**21, 2**21, 2**21))) == 3  # (2^21 + 1)^3 > 2^63
    assert len(order_keys(*parts, (2**20, 2**20, 2**20))) == 1
    wide = [part.astype(object) for part in parts]
    assert len(order_keys(*wide, (1, 1, 1))) == 3
