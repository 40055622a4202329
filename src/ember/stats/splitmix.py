"""The resampling stream of statistics.md §3: SplitMix64 outputs z(i) for a seed σ.

``splitmix64`` is the definition, one value in pure Python; ``splitmix64_block``
computes a run of consecutive outputs with numpy (the ``stats`` extra), all in
``uint64`` so that every product wraps modulo 2^64 as the spec's arithmetic does.
"""

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def splitmix64(seed, i):
    """z(i) for seed σ (statistics.md §3), as a Python int 0 <= z < 2^64."""
    x = (seed + (i + 1) * GAMMA) & MASK64
    x = ((x ^ (x >> 30)) * MIX1) & MASK64
    x = ((x ^ (x >> 27)) * MIX2) & MASK64
    return x ^ (x >> 31)


def splitmix64_block(seed, start, count):
    """z(start), ..., z(start + count - 1) as a numpy ``uint64`` array (the same values as ``splitmix64``).

    The first x is computed exactly in Python; the rest follow by adding γ
    (x(i + 1) = x(i) + γ mod 2^64).  numpy wraps ``uint64`` array arithmetic
    silently, which is the modulo the spec asks for; shifts and multiplies
    work in place to keep one array of temporaries.
    """
    import numpy as np

    first = (seed + (start + 1) * GAMMA) & MASK64
    x = np.arange(count, dtype=np.uint64)
    x *= np.uint64(GAMMA)
    x += np.uint64(first)
    shifted = np.empty_like(x)
    for shift, multiplier in ((30, MIX1), (27, MIX2)):
        np.right_shift(x, np.uint64(shift), out=shifted)
        x ^= shifted
        x *= np.uint64(multiplier)
    np.right_shift(x, np.uint64(31), out=shifted)
    x ^= shifted
    return x
