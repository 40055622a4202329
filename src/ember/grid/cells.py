"""Cells and their neighbours: the indexing every grid algorithm shares.

A cell is the integer ``row * cols + col``: flat indexes make the per-step
work list and bytearray lookups instead of tuple hashing.
"""

DIRECTIONS = ("north", "south", "west", "east")
DELTAS = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
UNREACHABLE = -1
FAR = 2**31 - 1  # a distance larger than any on a grid


def around(i, cols, size):
    """Cell ``i``'s 4-neighbours (north, south, west, east), -1 where off the grid."""
    col = i % cols
    return (
        i - cols if i >= cols else -1,
        i + cols if i + cols < size else -1,
        i - 1 if col else -1,
        i + 1 if col + 1 < cols else -1,
    )
