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
        self._neighbours = {}  # cell -> grid.neighbours(cell), for the cells asked about

    def neighbours(self, cell):
        """``grid.neighbours(cell)`` as (direction, neighbour, draw text after the step), computed once per cell.

        Frontier cells are asked every step; the draw text of cell [row, col]
        toward a direction ends in ``row|col|direction`` whatever the step.
        """
        found = self._neighbours.get(cell)
        if found is None:
            row, col = divmod(cell, self.grid.cols)
            found = self._neighbours[cell] = tuple(
                (d, n, f"{row}|{col}|{d}".encode()) for d, n in self.grid.neighbours(cell)
            )
        return found

    def ignitions(self, step, frontier, burning):
        """Sorted cells of ``frontier`` (unburnt, non-wall, next to fire) that ignite."""
        if self.numerator == 0:
            return []
        if self._certain:
            return sorted(frontier)  # u < 2^64 <= limit makes every draw succeed
        limit, neighbours = self._limit, self.neighbours
        prefix = f"ember/fire/1.0|{self.seed}|{step}|".encode()
        ignited = []
        for cell in frontier:
            for _, neighbour, tail in neighbours(cell):
                if burning[neighbour] and sha256(prefix + tail).digest()[:8] < limit:
                    ignited.append(cell)
                    break  # draws have no side effects: one success decides
        ignited.sort()
        return ignited
