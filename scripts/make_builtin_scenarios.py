"""Regenerate the built-in scenarios in src/ember/scenarios/ (deterministic).

Run from the repository root: ``python scripts/make_builtin_scenarios.py``.
The JSON files are the source of truth once committed; this script only
documents how they were laid out.
"""

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "ember" / "scenarios"


def scenario(sid, rows, cols, walls, exits, people, ignitions, p, mode, horizon):
    return {
        "schema_version": "1.0",
        "scenario_id": sid,
        "grid": {"rows": rows, "cols": cols},
        "walls": [list(c) for c in sorted(walls)],
        "exits": [{"exit_id": e, "position": list(c)} for e, c in exits],
        "people": [{"person_id": f"p{i:0{len(str(len(people)))}d}", "position": list(c)} for i, c in enumerate(people)],
        "fire": {"ignitions": [list(c) for c in ignitions], "spread_probability": p, "enter_fire": mode},
        "termination": {"max_steps": horizon},
    }


def border(rows, cols, gaps=()):
    cells = {(r, c) for r in range(rows) for c in range(cols) if r in (0, rows - 1) or c in (0, cols - 1)}
    return cells - set(gaps)


def small_room():
    exits = [("door", (0, 5))]
    walls = border(8, 10, gaps=[(0, 5)])
    people = [(2, 2), (3, 6), (5, 3), (6, 7)]
    return scenario("small-room", 8, 10, walls, exits, people, [(6, 1)], "1/4", "casualty", 200)


def office():
    rows, cols = 30, 40
    exits = [("west", (15, 0)), ("north", (0, 20)), ("east", (15, 39))]
    walls = border(rows, cols, gaps=[c for _, c in exits])
    # Offices on both sides of a central corridor (row 15) and a vertical corridor (col 20).
    for r in (9, 21):
        walls |= {(r, c) for c in range(1, cols - 1) if c not in (5, 14, 20, 26, 34)}
    for c in (10, 30):
        walls |= {(r, c) for r in range(1, rows - 1) if r not in (4, 15, 26)}
    rng = random.Random(2)
    free = [(r, c) for r in range(1, rows - 1) for c in range(1, cols - 1) if (r, c) not in walls]
    people = rng.sample(sorted(set(free) - {(24, 33)}), 20)
    return scenario("office-floor", rows, cols, walls, exits, people, [(24, 33)], "1/8", "block", 500)


def bottleneck():
    rows, cols = 14, 14
    exits = [("door", (13, 7))]
    walls = border(rows, cols, gaps=[(13, 7)])
    inside = [(r, c) for r in range(1, rows - 1) for c in range(1, cols - 1)]
    people = random.Random(3).sample(inside[12:], 50)
    return scenario("bottleneck", rows, cols, walls, exits, people, [(1, 1)], "1/20", "casualty", 1000)


def hall():
    rows = cols = 200
    exits = [("north", (0, 100)), ("south", (199, 100)), ("west", (100, 0)), ("east", (100, 199))]
    walls = {(r, c) for r in range(40, 160, 40) for c in range(20, 180) if c % 40}  # rows of pillars
    rng = random.Random(4)
    fire = [(100, 100), (60, 150)]
    free = sorted({(r, c) for r in range(rows) for c in range(cols)} - walls - {c for _, c in exits} - set(fire))
    people = rng.sample(free, 1000)
    return scenario("hall-1000", rows, cols, walls, exits, people, fire, "1/40", "casualty", 5000)


def long_horizon():
    rows = cols = 40
    exits = [("corner-nw", (0, 0)), ("corner-se", (39, 39))]
    ring = {(r, c) for r in range(10, 30) for c in range(10, 30) if r in (10, 29) or c in (10, 29)}
    inside = [(r, c) for r in range(11, 29) for c in range(11, 29)]
    people = random.Random(5).sample(inside, 20)
    closet = {(r, c) for r in range(0, 5) for c in range(17, 24) if r == 4 or c in (17, 23)}
    # The enclosure has no door: its people can never leave, and the fire,
    # shut in a closet, can never reach them, so all 20 survive the whole
    # 1,000,000-step horizon while the record stays small per step.
    return scenario("long-horizon", rows, cols, ring | closet, exits, people, [(0, 20)], "1/16", "casualty", 1_000_000)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (small_room, office, bottleneck, hall, long_horizon):
        data = make()
        name = make.__name__.replace("_", "-")
        (OUT / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
