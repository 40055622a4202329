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
        self.grid = grid
        self.seed = seed
        self.numerator = numerator
        self.denominator = denominator
        self.threshold = numerator * TWO_64  # ignite when u * D < N * 2^64

    def ignitions(self, step, frontier, burning):
        """Sorted cells of ``frontier`` (unburnt, non-wall, next to fire) that ignite."""
        if self.numerator == 0:
            return []
        if self.numerator == self.denominator:
            return sorted(frontier)  # u < 2^64 makes every draw succeed
        cols, denominator, threshold = self.grid.cols, self.denominator, self.threshold
        prefix = f"ember/fire/1.0|{self.seed}|{step}|"
        ignited = []
        for cell in frontier:
            row, col = divmod(cell, cols)
            head = f"{prefix}{row}|{col}|"
            for direction, neighbour in self.grid.neighbours(cell):
                if burning[neighbour]:
                    u = int.from_bytes(sha256(f"{head}{direction}".encode()).digest()[:8], "big")
                    if u * denominator < threshold:
                        ignited.append(cell)
                        break  # draws have no side effects: one success decides
        ignited.sort()
        return ignited
