"""The fire RNG of simulator.md §3 rule 4: one SHA-256 draw per burning neighbour."""

from hashlib import sha256

TWO_64 = 2**64


def fire_draw(seed, step, row, col, direction):
    """The 64-bit draw u for cell [row, col] toward ``direction`` at ``step``."""
    text = f"ember/fire/1.0|{seed}|{step}|{row}|{col}|{direction}"
    return int.from_bytes(sha256(text.encode()).digest()[:8], "big")


class FireSpread:
    """Decides which frontier cells ignite at a step, given p = N/D.

    The frontier (open cells not burning, next to a burning cell) is kept
    with each cell's draw texts: one per burning neighbour, the part of
    ``ember/fire/1.0|{seed}|{step}|{row}|{col}|{d}`` after the step, which
    does not change from step to step.  ``burn(cells)`` adds the texts a
    new burning cell gives its neighbours, so ``ignitions`` draws exactly
    the draws of rule 4, with nothing to look up.
    """

    def __init__(self, grid, seed, numerator, denominator):
        self.grid, self.seed = grid, seed
        self.numerator, self.denominator = numerator, denominator
        self.threshold = numerator * TWO_64  # ignite when u * D < N * 2^64
        # u * D < N * 2^64  <=>  u < ceil(N * 2^64 / D) =: limit, an integer
        # below 2^64 when N < D; comparing the draw's 8 big-endian bytes with
        # the limit's is comparing the integers, without making one per draw.
        limit = -(-self.threshold // denominator)
        self._certain = limit >= TWO_64  # every u < 2^64 succeeds (N = D, or D beyond 2^64)
        # Padded with 24 zero bytes, the limit compares with the whole 32-byte digest as its first 8
        # bytes compare with the 8-byte limit (equal first bytes: the digest is not below), without
        # slicing each digest.
        self._limit = None if self._certain else limit.to_bytes(8, "big") + bytes(24)
        self.frontier = {}  # frontier cell -> its draw texts after the step, one per burning neighbour

    def burn(self, cells, burning):
        """``cells`` now burn (``burning``, a mask, already says so): the frontier changes round them."""
        frontier, grid = self.frontier, self.grid
        cols, size, open_ = grid.cols, grid.size, grid.open
        for x in cells:
            frontier.pop(x, None)
            row, col = divmod(x, cols)
            # Each open, unburnt neighbour n draws toward x: the direction from n to x.
            # bytes formatting: the same decimal digits as the f-string of rule 4, without a str to encode.
            if row:
                n = x - cols
                if open_[n] and not burning[n]:
                    frontier.setdefault(n, []).append(b"%d|%d|south" % (row - 1, col))
            n = x + cols
            if n < size and open_[n] and not burning[n]:
                frontier.setdefault(n, []).append(b"%d|%d|north" % (row + 1, col))
            if col:
                n = x - 1
                if open_[n] and not burning[n]:
                    frontier.setdefault(n, []).append(b"%d|%d|east" % (row, col - 1))
            if col + 1 < cols:
                n = x + 1
                if open_[n] and not burning[n]:
                    frontier.setdefault(n, []).append(b"%d|%d|west" % (row, col + 1))

    def ignitions(self, step):
        """Sorted cells of the frontier that ignite at ``step`` (the caller then ``burn``s them)."""
        if self.numerator == 0:
            return []
        if self._certain:
            return sorted(self.frontier)  # u < 2^64 <= limit makes every draw succeed
        limit = self._limit
        prefix = f"ember/fire/1.0|{self.seed}|{step}|".encode()
        ignited = []
        for cell, tails in self.frontier.items():
            for tail in tails:
                if sha256(prefix + tail).digest() < limit:
                    ignited.append(cell)
                    break  # draws have no side effects: one success decides
        ignited.sort()
        return ignited

    def spread(self, step, burning):
        """Rule 4 at ``step``: the sorted cells that ignite, marked in the mask ``burning`` and burnt.

        The one place a step's fire is decided: the simulator and the bounds
        (``ember.bounds``, which needs the fire without people) both call it.
        """
        ignited = self.ignitions(step)
        for cell in ignited:
            burning[cell] = 1
        if ignited:
            self.burn(ignited, burning)
        return ignited
