"""Incremental exit reachability and greedy distance field vs from-scratch recomputation.

The references below are written over (row, col) pairs, independently of
``ember.grid``, so the incremental structures are compared with plain BFS.
"""

from collections import deque

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember.grid.cells import UNREACHABLE
from ember.grid.exit_distances import ExitDistances
from ember.grid.floor import Grid
from ember.grid.reachability import ExitReachability
from ember.sim.policies import GreedyPolicy

ORDER = (("north", -1, 0), ("south", 1, 0), ("west", 0, -1), ("east", 0, 1))


# -- references ---------------------------------------------------------------


def ref_distances(rows, cols, walls, exits, burning):
    """{(r, c): distance to the nearest usable exit} over passable cells; missing = unreachable."""
    blocked = set(walls) | set(burning)
    dist = {}
    queue = deque()
    for e in exits:
        if e not in blocked and e not in dist:
            dist[e] = 0
            queue.append(e)
    while queue:
        r, c = queue.popleft()
        for _, dr, dc in ORDER:
            n = (r + dr, c + dc)
            if 0 <= n[0] < rows and 0 <= n[1] < cols and n not in blocked and n not in dist:
                dist[n] = dist[(r, c)] + 1
                queue.append(n)
    return dist


def ref_reach(rows, cols, walls, exits, burning):
    return bytes(
        1 if (r, c) in ref_distances(rows, cols, walls, exits, burning) else 0 for r in range(rows) for c in range(cols)
    )


def ref_dist_array(rows, cols, walls, exits, burning):
    dist = ref_distances(rows, cols, walls, exits, burning)
    return [dist.get((r, c), UNREACHABLE) for r in range(rows) for c in range(cols)]


def ref_action(rows, cols, dist, cell):
    own = dist.get(cell)
    if own is None:
        return "stay"
    for name, dr, dc in ORDER:
        n = (cell[0] + dr, cell[1] + dc)
        if 0 <= n[0] < rows and 0 <= n[1] < cols and dist.get(n, UNREACHABLE) == own - 1:
            return name
    return "stay"


# -- helpers ------------------------------------------------------------------


class World:
    """A grid with walls and exits, driving both incremental structures in step."""

    def __init__(self, rows, cols, walls, exits, burning):
        self.rows, self.cols = rows, cols
        self.walls, self.exits = set(walls), list(exits)
        self.burning = set(burning)
        self.grid = Grid(rows, cols, [self.flat(w) for w in self.walls])
        exit_cells = [self.flat(e) for e in self.exits]
        burning_cells = [self.flat(b) for b in self.burning]
        self.reach = ExitReachability(self.grid, exit_cells, burning_cells)
        self.field = ExitDistances(self.grid, exit_cells, burning_cells)

    def flat(self, cell):
        return cell[0] * self.cols + cell[1]

    def ignite(self, cells):
        cells = [c for c in cells if c not in self.burning]
        self.burning.update(cells)
        self.reach.ignite([self.flat(c) for c in cells])
        self.field.burn([self.flat(c) for c in cells])

    def check(self):
        args = (self.rows, self.cols, self.walls, self.exits, self.burning)
        assert bytes(self.reach.reach) == ref_reach(*args)
        assert self.field.distances() == ref_dist_array(*args)


def scenario_for(rows, cols, walls, exits, people):
    return {
        "schema_version": "1.0",
        "scenario_id": "grid-test",
        "grid": {"rows": rows, "cols": cols},
        "walls": sorted([r, c] for r, c in walls),
        "exits": [{"exit_id": f"e{i}", "position": list(e)} for i, e in enumerate(exits)],
        "people": [{"person_id": f"p{i}", "position": list(p)} for i, p in enumerate(people)],
        "fire": {"ignitions": [], "spread_probability": "1/2", "enter_fire": "casualty"},
        "termination": {"max_steps": 10},
    }


def observation(step, people, burning):
    return {
        "observation_version": "1.0",
        "step": step,
        "people": [{"person_id": f"p{i}", "position": list(p)} for i, p in sorted(people.items())],
        "burning": sorted([r, c] for r, c in burning),
        "trapped": [],
    }


# -- property tests -----------------------------------------------------------


@st.composite
def worlds(draw):
    rows = draw(st.integers(1, 12))
    cols = draw(st.integers(1, 12))
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    wall_density = draw(st.sampled_from([0.0, 0.15, 0.3, 0.5]))
    walls = {cell for cell in cells if draw(st.floats(0, 1)) < wall_density} if wall_density else set()
    free = [cell for cell in cells if cell not in walls]
    if not free:
        walls.discard(cells[0])
        free = [cells[0]]
    exits = draw(st.lists(st.sampled_from(free), min_size=1, max_size=5, unique=True))
    burning = draw(st.lists(st.sampled_from(free), max_size=4, unique=True))
    # Batches of new ignitions: any non-wall cells (exits, isolated cells,
    # cells outside the region), several per batch, big jumps included.
    batches = draw(st.lists(st.lists(st.sampled_from(free), min_size=1, max_size=8, unique=True), max_size=25))
    return rows, cols, walls, exits, burning, batches


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_incremental_structures_match_recomputation(world):
    rows, cols, walls, exits, burning, batches = world
    w = World(rows, cols, walls, exits, burning)
    w.check()
    for batch in batches:
        w.ignite(batch)
        w.check()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.data())
def test_greedy_actions_match_recomputation(world, data):
    rows, cols, walls, exits, burning, batches = world
    others = [
        (r, c)
        for r in range(rows)
        for c in range(cols)
        if (r, c) not in walls and (r, c) not in exits and (r, c) not in burning
    ]
    if not others:
        return  # a scenario needs someone to place
    policy = GreedyPolicy(scenario_for(rows, cols, walls, exits, others[:1]))
    burning = set(burning)
    for step, batch in enumerate([[]] + batches, start=1):
        burning.update(batch)
        # Sometimes the policy misses observations: the burning list jumps.
        if step > 1 and data.draw(st.booleans()):
            continue
        # Everyone who could be active: every open cell off the exits and the fire.
        people = {
            i: (r, c)
            for i, (r, c) in enumerate(
                (r, c)
                for r in range(rows)
                for c in range(cols)
                if (r, c) not in walls and (r, c) not in exits and (r, c) not in burning
            )
        }
        actions = policy(observation(step, people, burning))
        dist = ref_distances(rows, cols, walls, exits, burning)
        assert actions == {f"p{i}": ref_action(rows, cols, dist, cell) for i, cell in people.items()}
        assert policy._field.distances() == ref_dist_array(rows, cols, walls, exits, burning)


def test_greedy_rebuilds_when_burning_list_is_not_a_superset():
    rows, cols = 3, 5
    exits = [(1, 0)]
    people = {0: (1, 3)}
    policy = GreedyPolicy(scenario_for(rows, cols, set(), exits, [(1, 3)]))
    assert policy(observation(1, people, {(1, 1), (1, 2), (0, 1), (2, 1)})) == {"p0": "stay"}
    # A different burning set of another size (not a superset): recomputed, not patched.
    assert policy(observation(1, people, {(0, 0)})) == {"p0": "west"}
    assert policy(observation(2, people, {(0, 0), (1, 2)})) == {"p0": "north"}


# -- hand-made cases ----------------------------------------------------------


def row_of(world, r):
    return [world.reach.reach[world.flat((r, c))] for c in range(world.cols)]


def test_corridor_cut_in_two_far_side_loses_reach():
    w = World(1, 7, set(), [(0, 0)], [])
    assert row_of(w, 0) == [1] * 7
    w.ignite([(0, 3)])
    w.check()
    assert row_of(w, 0) == [1, 1, 1, 0, 0, 0, 0]
    assert w.field.distances() == [0, 1, 2, -1, -1, -1, -1]


def test_pocket_sealed_off():
    # A pocket (P) whose only door is D = (2, 4); the exit E is outside.
    #   . . . . . .
    #   . # # # # .
    #   . # P P D .
    #   . # P P # .
    #   E # # # # .
    walls = {(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (3, 1), (3, 4), (4, 1), (4, 2), (4, 3), (4, 4)}
    w = World(5, 6, walls, [(4, 0)], [])
    pocket = [(2, 2), (2, 3), (3, 2), (3, 3)]
    assert all(w.reach.reach[w.flat(c)] for c in pocket)
    w.ignite([(2, 4)])
    w.check()
    assert not any(w.reach.reach[w.flat(c)] for c in pocket)
    assert w.reach.reach[w.flat((0, 5))] == 1
    assert all(w.field.distances()[w.flat(c)] == UNREACHABLE for c in pocket)


def test_exit_burning_clears_everything():
    w = World(3, 3, set(), [(1, 1)], [])
    assert all(w.reach.reach)
    w.ignite([(1, 1)])
    w.check()
    assert not any(w.reach.reach)
    assert all(d == UNREACHABLE for d in w.field.distances())


def test_two_exits_one_side_keeps_its_exit():
    w = World(1, 9, set(), [(0, 0), (0, 8)], [])
    w.ignite([(0, 4)])
    w.check()
    assert row_of(w, 0) == [1, 1, 1, 1, 0, 1, 1, 1, 1]
    assert w.field.distances() == [0, 1, 2, 3, -1, 3, 2, 1, 0]
    w.ignite([(0, 8)])  # the right piece loses its only exit; the left keeps its own
    w.check()
    assert row_of(w, 0) == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    w.ignite([(0, 2)])
    w.check()
    assert row_of(w, 0) == [1, 1, 0, 0, 0, 0, 0, 0, 0]


def test_split_in_open_room_with_ring_of_fire():
    # Fire closes a ring around the centre: the inner cells lose reach only
    # when the ring is complete, and only the enclosed part does.
    w = World(7, 7, set(), [(0, 0)], [])
    ring = [(2, 2), (2, 3), (2, 4), (3, 4), (4, 4), (4, 3), (4, 2), (3, 2)]
    for cell in ring[:-1]:
        w.ignite([cell])
        w.check()
        assert w.reach.reach[w.flat((3, 3))] == 1
    w.ignite([ring[-1]])
    w.check()
    assert w.reach.reach[w.flat((3, 3))] == 0
    assert w.field.distances()[w.flat((3, 3))] == UNREACHABLE


def test_several_ignitions_in_one_batch_and_outside_the_region():
    w = World(4, 4, {(1, 1), (1, 2), (2, 1), (2, 2)}, [(0, 0)], [])
    w.ignite([(0, 1), (1, 0)])  # both ways round are cut in one step
    w.check()
    assert sum(w.reach.reach) == 1
    w.ignite([(3, 3), (0, 3)])  # cells already outside the region
    w.check()
    w.ignite([(0, 0)])
    w.check()
    assert sum(w.reach.reach) == 0


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    data=st.data(),
)
def test_lower_distances_is_manhattan_with_and_without_the_neighbour_table(rows, cols, data):
    """Invariant: after lowering from sources added in batches, dist[x] is x's Manhattan distance to the
    nearest source (no walls), whether neighbours come from the table or from ``around`` (large grids)."""
    import ember.grid.breadth_first as grid_module
    from ember.grid.breadth_first import lower_distances, neighbour_table
    from ember.grid.cells import FAR

    size = rows * cols
    batches = data.draw(st.lists(st.lists(st.integers(0, size - 1), max_size=4), min_size=1, max_size=4))
    seen = []
    for limit in (grid_module.NEIGHBOUR_TABLE_MAX_CELLS, 0):
        saved = grid_module.NEIGHBOUR_TABLE_MAX_CELLS
        grid_module.NEIGHBOUR_TABLE_MAX_CELLS = limit
        neighbour_table.cache_clear()
        try:
            dist = [FAR] * size
            sources = []
            for batch in batches:
                lower_distances(dist, batch, cols, size)
                sources += batch
                want = [
                    min((abs(i // cols - s // cols) + abs(i % cols - s % cols) for s in sources), default=FAR)
                    for i in range(size)
                ]
                assert dist == want
            seen.append(dist)
        finally:
            grid_module.NEIGHBOUR_TABLE_MAX_CELLS = saved
            neighbour_table.cache_clear()
    assert seen[0] == seen[1]
