"""Shared helpers: build small scenarios as plain dicts (simulator.md §2)."""

ACTIONS = ("stay", "north", "south", "west", "east")


def make_scenario(
    rows,
    cols,
    *,
    people,
    exits,
    walls=(),
    ignitions=(),
    p="0/1",
    enter_fire="casualty",
    max_steps=10,
    scenario_id="test",
):
    """A scenario dict. ``people`` and ``exits`` map ID -> (row, col)."""
    return {
        "schema_version": "1.0",
        "scenario_id": scenario_id,
        "grid": {"rows": rows, "cols": cols},
        "walls": [list(c) for c in walls],
        "exits": [{"exit_id": e, "position": list(c)} for e, c in exits.items()],
        "people": [{"person_id": i, "position": list(c)} for i, c in people.items()],
        "fire": {"ignitions": [list(c) for c in ignitions], "spread_probability": p, "enter_fire": enter_fire},
        "termination": {"max_steps": max_steps},
    }


def picture_scenario(picture, *, ignitions=(), **kwargs):
    """A scenario drawn as text, one string per row.

    ``#`` wall, ``.`` floor, ``*`` initial ignition, a digit ``k`` an exit
    with ID ``ek``, a letter a person with that letter as ID.  Extra
    ``ignitions`` (e.g. on an exit) are appended after the drawn ones.
    """
    rows, cols = len(picture), len(picture[0])
    walls, fire, exits, people = [], [], {}, {}
    for r, line in enumerate(picture):
        if len(line) != cols:
            raise ValueError(f"row {r} of the picture has {len(line)} cells, not {cols}")
        for c, ch in enumerate(line):
            if ch == "#":
                walls.append((r, c))
            elif ch == "*":
                fire.append((r, c))
            elif ch.isdigit():
                exits[f"e{ch}"] = (r, c)
            elif ch.isalpha():
                people[ch] = (r, c)
            elif ch != ".":
                raise ValueError(f"unknown picture character {ch!r}")
    return make_scenario(
        rows, cols, people=people, exits=exits, walls=walls, ignitions=fire + list(ignitions), **kwargs
    )


def stay_all(observation):
    return {p["person_id"]: "stay" for p in observation["people"]}
