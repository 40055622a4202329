"""The generator's random numbers: integers from SHA-256, stable everywhere.

Why not ``random.Random``: its float draws, ``choice``, ``sample`` and
``shuffle`` are documented to change between Python versions (3.12 changed
how ``randrange`` and ``shuffle`` consume bits, and seeding from a str
depends on the seeding version), and ``hash()`` of a str is salted per
process.  SHA-256 and integer arithmetic are the same on every machine and
every Python, so a scenario generated here is byte-identical wherever it is
generated.  The pattern is the simulator's fire RNG (simulator.md §3 rule 4):
draw k of a generator is

    int.from_bytes(sha256(f"ember/generate/1.0|{family}|{seed}|{k}".encode()).digest(), "big")

a 256-bit integer.  ``below(n)`` is that integer mod n: its bias is below
n / 2^256, far under anything observable, and it costs no rejection loop.
"""

from hashlib import sha256

DRAW_VERSION = "1.0"


class Draws:
    """A numbered stream of 256-bit integers for one (family, seed)."""

    def __init__(self, family, seed):
        self.prefix = f"ember/generate/{DRAW_VERSION}|{family}|{seed}|"
        self.count = 0

    def bits(self):
        """The next 256-bit integer of the stream."""
        text = f"{self.prefix}{self.count}"
        self.count += 1
        return int.from_bytes(sha256(text.encode()).digest(), "big")

    def below(self, n):
        """An integer in ``range(n)``, n >= 1."""
        return self.bits() % n

    def between(self, low, high):
        """An integer in ``[low, high]`` (inclusive), low <= high."""
        return low + self.below(high - low + 1)

    def choice(self, items):
        return items[self.below(len(items))]

    def sample(self, items, k):
        """``k`` distinct items of the sequence ``items``, in draw order (partial Fisher-Yates)."""
        pool = list(items)
        n = len(pool)
        for i in range(k):
            j = i + self.below(n - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def shuffled(self, items):
        return self.sample(items, len(items))
