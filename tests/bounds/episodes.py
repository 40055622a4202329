"""Seeded random small episodes for the bounds tests: <= 25 cells, <= 8 steps, a few people."""

import random

from helpers.scenarios import make_scenario

PROBABILITIES = ("0/1", "1/2", "1/1", "1/3")
MODES = ("casualty", "block")


def random_scenario(rng, index, max_people=3):
    """The index-th scenario: p and enter_fire take every value in turn, the rest is drawn from ``rng``."""
    rows = rng.randint(1, 5)
    cols = rng.randint(2 if rows == 1 else 1, 5)
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    rng.shuffle(cells)
    n_people = rng.randint(1, min(max_people, len(cells) - 1))
    people = {f"p{i}": cells[i] for i in range(n_people)}
    n_exits = rng.randint(1, 2) if len(cells) - n_people > 1 else 1
    exits = {f"e{i}": cells[n_people + i] for i in range(n_exits)}
    walls, ignitions = [], []
    for cell in cells[n_people + n_exits :]:
        u = rng.random()
        if u < 0.2:
            walls.append(cell)
        elif u < 0.4:
            ignitions.append(cell)
    if rng.random() < 0.3:
        ignitions.append(rng.choice(list(exits.values())))  # an exit may burn from the start
    return make_scenario(
        rows,
        cols,
        people=people,
        exits=exits,
        walls=walls,
        ignitions=ignitions,
        p=PROBABILITIES[index % len(PROBABILITIES)],
        enter_fire=MODES[(index // len(PROBABILITIES)) % len(MODES)],
        max_steps=rng.randint(1, 8),
        scenario_id=f"bounds-{index}",
    )


def random_episodes(count, seed, max_people=3):
    """``count`` (scenario, seed) pairs, the same on every run."""
    rng = random.Random(seed)
    return [(random_scenario(rng, i, max_people), rng.randrange(2**64)) for i in range(count)]
