"""Random small scenarios and action plans (hypothesis strategies) for the simulator and checks tests."""

from hypothesis import strategies as st

from helpers.scenarios import ACTIONS, make_scenario

ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,2}", fullmatch=True)
KINDS = ["floor", "floor", "wall", "fire", "exit", "burning_exit", "person", "person", "person"]


@st.composite
def small_scenarios(draw):
    rows = draw(st.integers(1, 5))
    cols = draw(st.integers(2 if rows == 1 else 1, 5))
    cells = draw(st.permutations([(r, c) for r in range(rows) for c in range(cols)]))
    kinds = ["exit", "person"] + draw(
        st.lists(st.sampled_from(KINDS), min_size=len(cells) - 2, max_size=len(cells) - 2)
    )
    walls = [c for c, k in zip(cells, kinds) if k == "wall"]
    fire = [c for c, k in zip(cells, kinds) if k in ("fire", "burning_exit")]
    exit_cells = [c for c, k in zip(cells, kinds) if k in ("exit", "burning_exit")]
    person_cells = [c for c, k in zip(cells, kinds) if k == "person"]
    exit_ids = draw(st.lists(ID, min_size=len(exit_cells), max_size=len(exit_cells), unique=True))
    person_ids = draw(st.lists(ID, min_size=len(person_cells), max_size=len(person_cells), unique=True))
    return make_scenario(
        rows,
        cols,
        people=dict(zip(person_ids, person_cells)),
        exits=dict(zip(exit_ids, exit_cells)),
        walls=walls,
        ignitions=fire,
        p=draw(st.sampled_from(["0/1", "1/1", "1/2", "1/3", "2/3", "1/4294967296", "4294967295/4294967296"])),
        enter_fire=draw(st.sampled_from(["casualty", "block"])),
        max_steps=draw(st.integers(1, 7)),
    )


def action_plans(n_people, steps):
    return st.lists(
        st.lists(st.sampled_from(ACTIONS), min_size=n_people, max_size=n_people), min_size=steps, max_size=steps
    )


@st.composite
def episodes(draw):
    sc = draw(small_scenarios())
    seed = draw(st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1)))
    plan = draw(action_plans(len(sc["people"]), sc["termination"]["max_steps"]))
    return sc, seed, plan
