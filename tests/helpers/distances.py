"""Plain references the kept distance fields are checked against: a breadth-first search, a brute minimum."""

from collections import deque

from ember.grid.cells import UNREACHABLE


def bfs(rows, cols, walls, exits, burning):
    blocked = set(walls) | set(burning)
    dist = [UNREACHABLE] * (rows * cols)
    queue = deque()
    for e in exits:
        if e not in blocked and dist[e] == UNREACHABLE:
            dist[e] = 0
            queue.append(e)
    while queue:
        i = queue.popleft()
        r, c = divmod(i, cols)
        for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            j = rr * cols + cc
            if 0 <= rr < rows and 0 <= cc < cols and j not in blocked and dist[j] == UNREACHABLE:
                dist[j] = dist[i] + 1
                queue.append(j)
    return dist


def brute_manhattan(rows, cols, burning):
    """Per cell, the Manhattan distance to the nearest of ``burning`` (every pair looked at)."""
    return [min(abs(i // cols - b // cols) + abs(i % cols - b % cols) for b in burning) for i in range(rows * cols)]


def assert_manhattan_field_follows(field, rows, cols, batches):
    """Ignite ``batches`` in ``field`` one by one; after each, every cell equals the brute minimum."""
    burning = set()
    for batch in batches:
        field.ignite(batch)
        burning |= set(batch)
        assert field.distances().tolist() == brute_manhattan(rows, cols, burning)
