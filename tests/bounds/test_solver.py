"""The solver and the networks: OR-Tools against a plain Edmonds–Karp on random unit networks fed in blocks;
the ceilings and floors the short horizons rest on; the values against §2's definition on larger floors.

The brute force (test_brute_force.py) checks bounds.md's values on tiny
episodes; the floors here are too large for it, so the values are checked
against the definition itself: the flow of G_H, and n − the flow of G_{T_s}
with its sink arcs, each solved whole, without the short horizons, cuts and
skipped flows ``EpisodeBounds`` takes.
"""

import collections
import random

import numpy as np
import pytest

import ember.bounds.episode as episode_module
from ember.bounds import EpisodeBounds
from ember.bounds.episode import shortcut_region
from ember.bounds.network import Floor, Network, Reach
from ember.bounds.schedule import FireSchedule
from ember.bounds.solver import maximum_flow
from ember.bounds.witness import CASUALTIES_FILE, EVACUATED_FILE, witness_records
from ember.engine.read import episode_metrics
from ember.scenario import compile_scenario

from .episodes import MODES, PROBABILITIES
from helpers.scenarios import make_scenario


def edmonds_karp(arcs, source, sink):
    residual = collections.defaultdict(int)
    out = collections.defaultdict(set)
    for tail, head in arcs:
        residual[tail, head] += 1
        out[tail].add(head)
        out[head].add(tail)
    value = 0
    while True:
        parent = {source: None}
        queue = collections.deque([source])
        while queue and sink not in parent:
            v = queue.popleft()
            for w in out[v]:
                if w not in parent and residual[v, w] > 0:
                    parent[w] = v
                    queue.append(w)
        if sink not in parent:
            return value
        w = sink
        while parent[w] is not None:
            residual[parent[w], w] -= 1
            residual[w, parent[w]] += 1
            w = parent[w]
        value += 1


def random_network(rng):
    """A unit network on up to 32 nodes, its arcs in random blocks (as ``Network.arcs`` yields them)."""
    inner = rng.randint(2, 30)
    source, sink = inner, inner + 1
    arcs = set()
    for _ in range(rng.randint(1, 4 * inner)):
        tail, head = rng.sample(range(inner), 2)
        arcs.add((tail, head))
    arcs |= {(source, v) for v in rng.sample(range(inner), rng.randint(1, inner))}
    arcs |= {(v, sink) for v in rng.sample(range(inner), rng.randint(1, inner))}
    arcs = sorted(arcs)
    rng.shuffle(arcs)
    cuts = sorted(rng.sample(range(1, len(arcs)), min(3, len(arcs) - 1)))
    blocks = [arcs[a:b] for a, b in zip([0, *cuts], [*cuts, len(arcs)])]
    return inner + 2, blocks, source, sink


NETWORKS = [random_network(random.Random(i)) for i in range(300)]


@pytest.mark.parametrize("index", range(len(NETWORKS)))
def test_the_value_is_edmonds_karps_and_the_flow_carries_it(index):
    nodes, blocks, source, sink = NETWORKS[index]
    arrays = [
        (np.array([t for t, _ in b], dtype=np.int32), np.array([h for _, h in b], dtype=np.int32)) for b in blocks
    ]
    value, (tails, heads) = maximum_flow(nodes, lambda: iter(arrays), source, sink, want_flow=True)
    arcs = [arc for block in blocks for arc in block]
    assert value == edmonds_karp(arcs, source, sink)
    carried = list(zip(tails.tolist(), heads.tolist()))
    assert set(carried) <= set(arcs) and len(set(carried)) == len(carried)
    balance = collections.Counter()
    for tail, head in carried:
        balance[tail] -= 1
        balance[head] += 1
    assert balance[sink] == value and balance[source] == -value
    assert all(balance[v] == 0 for v in range(nodes) if v not in (source, sink))


def test_the_random_networks_have_flows_of_many_values():
    values = collections.Counter(
        edmonds_karp([arc for block in blocks for arc in block], source, sink) for _, blocks, source, sink in NETWORKS
    )
    assert len(values) >= 6 and values[0] < len(NETWORKS) // 4


def floor_episode(rng, index):
    """A floor of up to 9 x 9 cells with up to 14 people, a few exits and fires, H up to 45."""
    rows, cols = rng.randint(3, 9), rng.randint(3, 9)
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    rng.shuffle(cells)
    n_people = rng.randint(1, min(14, len(cells) // 2))
    n_exits = rng.randint(1, 3)
    people = {f"p{i}": cells[i] for i in range(n_people)}
    exits = {f"e{i}": cells[n_people + i] for i in range(n_exits)}
    rest = cells[n_people + n_exits :]
    walls = [cell for cell in rest if rng.random() < 0.15]
    ignitions = [cell for cell in rest if cell not in walls and rng.random() < 0.06]
    if not ignitions:
        walls = [cell for cell in walls if cell != rest[-1]]
        ignitions = [rest[-1]]
    scenario = make_scenario(
        rows,
        cols,
        people=people,
        exits=exits,
        walls=walls,
        ignitions=ignitions,
        p=PROBABILITIES[index % len(PROBABILITIES)],
        enter_fire=MODES[(index // len(PROBABILITIES)) % len(MODES)],
        max_steps=rng.randint(5, 45),
        scenario_id=f"floor-{index}",
    )
    return scenario, rng.randrange(2**64)


FLOORS = [floor_episode(random.Random(1000 + i), i) for i in range(80)]


def by_definition(scenario, seed):
    """(evacuated_max, casualties_min) of bounds.md §2, each network solved whole."""
    sc = compile_scenario(scenario)
    schedule = FireSchedule(sc, seed)
    floor = Floor(sc, schedule.ignite)
    n, horizon, stable = len(sc.person_ids), sc.max_steps, schedule.stable_step
    survive = horizon if stable is None else min(horizon, stable)
    evacuated, _ = Network(floor, horizon).solve()
    survivors, _ = Network(floor, survive, floor.standing).solve()
    return evacuated, n - survivors


@pytest.fixture(params=["short horizons", "exact networks"])
def way(request, monkeypatch):
    """Every floor both ways: with the short horizons, cuts and floors (whatever the network's size), and with
    the exact networks alone, as a network of at most ``SMALL_NETWORK`` vertices is solved."""
    monkeypatch.setattr(episode_module, "SMALL_NETWORK", 0 if request.param == "short horizons" else 10**9)
    return request.param


@pytest.mark.parametrize("scenario, seed", FLOORS)
def test_the_values_are_the_definitions_on_larger_floors(way, scenario, seed):
    found = EpisodeBounds(scenario, seed)
    assert (found.evacuated_max, found.casualties_min) == by_definition(scenario, seed)


def test_the_larger_floors_lose_people_to_the_fire_and_to_the_crowd():
    # Casualties, and evacuations short of everyone: the cases the short horizons and the cuts must settle.
    values = [by_definition(scenario, seed) for scenario, seed in FLOORS]
    people = [len(scenario["people"]) for scenario, _ in FLOORS]
    assert sum(c > 0 for _, c in values) >= 10
    assert sum(0 < e < n for (e, _), n in zip(values, people)) >= 10


@pytest.mark.parametrize("scenario, seed", FLOORS[:40])
def test_every_cut_and_every_short_horizon_brackets_the_exact_flow(scenario, seed):
    # G_T (T <= the exact horizon) is a floor; the exact network cut at T and its lone people are ceilings.
    sc = compile_scenario(scenario)
    schedule = FireSchedule(sc, seed)
    floor = Floor(sc, schedule.ignite)
    stable, horizon = schedule.stable_step, sc.max_steps
    if stable is None or stable >= horizon:
        exact, final = horizon, None
    else:
        exact, final = stable, shortcut_region(floor, stable)
    value, _ = Network(floor, exact, final).solve()
    reach = Reach(floor, exact, final)
    assert value <= len(reach.starts)
    assert reach.vertices == Network(floor, exact, final).vertices
    for steps in range(1, exact + 1):
        assert Network(floor, steps).solve()[0] <= value <= Network(floor, steps, reach.back[steps]).solve()[0]
    assert Network(floor, exact, reach.back[exact]).solve()[0] == value


@pytest.mark.parametrize("scenario, seed", FLOORS[:24])
def test_the_witness_flows_reach_the_values_on_larger_floors(way, scenario, seed):
    found = EpisodeBounds(scenario, seed, paths=True)
    assert len(found.evacuated_paths) == found.evacuated_max
    assert len(found.survivor_paths) == found.population - found.casualties_min
    assert all(exit_index is not None for _, exit_index in found.evacuated_paths)


@pytest.mark.parametrize("scenario, seed", FLOORS[:30])
def test_the_witness_records_measure_the_values_on_larger_floors(way, tmp_path, scenario, seed):
    # Paths joined from a short horizon and its stragglers, or survivors parked on cells that never burn,
    # must still play as records that reach the bounds (checked by the engine's metrics).
    found = witness_records(scenario, seed, tmp_path)
    assert episode_metrics(scenario, str(tmp_path / EVACUATED_FILE))["safety"]["evacuated"] == found.evacuated_max
    assert episode_metrics(scenario, str(tmp_path / CASUALTIES_FILE))["safety"]["casualties"] == found.casualties_min
    assert (found.evacuated_max, found.casualties_min) == by_definition(scenario, seed)
