"""The resampling stream (statistics.md §3): the spec's test vectors; the vectorised stream equals the scalar one."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.stats.splitmix import splitmix64, splitmix64_block

VECTORS = [
    (0, 0, 0xE220A8397B1DCDAF),
    (0, 1, 0x6E789E6AA1B965F4),
    (0, 2, 0x06C45D188009454F),
    (12345, 0, 0x22118258A9D111A0),
]
REMAINDERS = [(0, 5, [0, 0, 4, 4, 2]), (0, 3, [1, 0, 1, 1, 1]), (12345, 7, [5, 3, 5, 4, 3])]


@pytest.mark.parametrize(("seed", "i", "z"), VECTORS)
def test_vectors(seed, i, z):
    assert splitmix64(seed, i) == z
    block = splitmix64_block(seed, i, 1)
    assert str(block.dtype) == "uint64" and int(block[0]) == z


@pytest.mark.parametrize(("seed", "modulus", "expected"), REMAINDERS)
def test_vector_remainders(seed, modulus, expected):
    assert [splitmix64(seed, i) % modulus for i in range(5)] == expected
    import numpy as np

    block = splitmix64_block(seed, 0, 5)
    remainders = block % np.full(5, modulus, dtype=np.uint64)  # both operands uint64, as §3 says
    assert str(remainders.dtype) == "uint64" and [int(r) for r in remainders] == expected


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**64 - 1),
    start=st.one_of(st.integers(0, 1000), st.integers(0, 2**64 - 2000)),
    count=st.integers(0, 300),
)
def test_block_equals_scalar(seed, start, count):
    block = splitmix64_block(seed, start, count)
    assert [int(z) for z in block] == [splitmix64(seed, start + j) for j in range(count)]
