"""The fire RNG of simulator.md §3 rule 4: one SHA-256 draw per burning neighbour."""

from hashlib import sha256

TWO_64 = 2**64


def fire_draw(seed, step, row, col, direction):
    """The 64-bit draw u for cell [row, col] toward ``direction`` at ``step``."""
    text = f"ember/fire/1.0|{seed}|{step}|{row}|{col}|{direction}"
    return int.from_bytes(sha256(text.encode()).digest()[:8], "big")


class FireSpread:
    """Decides which frontier cells ignite at a step, given p = N/D."""

    def __init__(self, grid, seed, numerator, denominator):
        self.grid, self.seed = grid, seed
        self.numerator, self.denominator = numerator, denominator
        self.threshold = numerator * TWO_64  # ignite when u * D < N * 2^64
        # u * D < N * 2^64  <=>  u < ceil(N * 2^64 / D) =: limit, an integer
        # below 2^64 when N < D; comparing the draw's 8 big-endian bytes with
        # the limit's is comparing the integers, without making one per draw.
        limit = -(-self.threshold // denominator)
        self._certain = limit >= TWO_64  # every u < 2^64 succeeds (N = D, or D beyond 2^64)
        self._limit = None if self._certain else limit.to_bytes(8, "big")
        self._draws = {}  # frontier cell -> its draws_of(cell), dropped once the cell ignites

    def draws_of(self, cell):
        """(neighbour, draw text after the step) for each non-wall 4-neighbour of ``cell``.

        Frontier cells are asked every step; the draw text of cell [row, col]
        toward a direction ends in ``row|col|direction`` whatever the step.
        A wall never burns, so it never gives a draw.
        """
        grid = self.grid
        row, col = divmod(cell, grid.cols)
        return tuple((n, f"{row}|{col}|{d}".encode()) for d, n in grid.neighbours(cell) if grid.open[n])

    def ignitions(self, step, frontier, burning):
        """Sorted cells of ``frontier`` (unburnt, non-wall, next to fire) that ignite."""
        if self.numerator == 0:
            return []
        if self._certain:
            ignited = sorted(frontier)  # u < 2^64 <= limit makes every draw succeed
        else:
            limit, cache = self._limit, self._draws
            prefix = f"ember/fire/1.0|{self.seed}|{step}|".encode()
            ignited = []
            for cell in frontier:
                draws = cache.get(cell)
                if draws is None:
                    draws = cache[cell] = self.draws_of(cell)
                for neighbour, tail in draws:
                    if burning[neighbour] and sha256(prefix + tail).digest()[:8] < limit:
                        ignited.append(cell)
                        break  # draws have no side effects: one success decides
            ignited.sort()
        for cell in ignited:
            self._draws.pop(cell, None)  # never on the frontier again
        return ignited
