"""Random small floors for the scale tests: walls, exits, people, fire, either enter_fire rule."""

from hypothesis import strategies as st


@st.composite
def scenarios(draw):
    """Small random floors: walls, exits, people, fire, either enter_fire rule."""
    rows, cols = draw(st.integers(2, 9)), draw(st.integers(2, 9))
    cells = draw(st.permutations([[r, c] for r in range(rows) for c in range(cols)]))
    n_exits = draw(st.integers(1, 3))  # at most 3 of the 4 or more cells
    n_people = draw(st.integers(1, min(8, len(cells) - n_exits)))
    rest = cells[n_exits + n_people :]
    n_fire = draw(st.integers(0, min(3, len(rest))))
    fire, rest = rest[:n_fire], rest[n_fire:]
    walls = [c for c in rest if draw(st.booleans()) and draw(st.booleans())]
    return {
        "schema_version": "1.0",
        "scenario_id": "shared",
        "grid": {"rows": rows, "cols": cols},
        "walls": walls,
        "exits": [{"exit_id": f"e{k}", "position": c} for k, c in enumerate(cells[:n_exits])],
        "people": [{"person_id": f"p{k}", "position": c} for k, c in enumerate(cells[n_exits : n_exits + n_people])],
        "fire": {
            "ignitions": fire,
            "spread_probability": draw(st.sampled_from(["0/1", "1/4", "1/2", "1/1"])),
            "enter_fire": draw(st.sampled_from(["casualty", "block"])),
        },
        "termination": {"max_steps": draw(st.integers(1, 40))},
    }
