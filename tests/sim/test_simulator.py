"""The simulator against simulator.md §3–5 (movement, fire, trapped set,
termination, observation, policies, run record)."""

import hashlib
import io
import json
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember import ActionError, Simulator, load_scenario, run_episode, scenario_hash
from ember.canonical import canonical_json, canonical_record
from ember.scenario import builtin_names
from ember.sim.fire import fire_draw
from ember.sim.policies import make_policy

from helpers.random_episodes import episodes, small_scenarios
from helpers.scenarios import ACTIONS, make_scenario, picture_scenario, stay_all

DIRS = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
TWO_64 = 2**64


# ---------------------------------------------------------------------------
# An independent reference of simulator.md §3, written straight from the
# text with tuples and sets (slow, and shares no code with ember).


def draw_u(seed, t, row, col, d):
    text = f"ember/fire/1.0|{seed}|{t}|{row}|{col}|{d}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def reference_ignitions(rows, cols, walls, burning, seed, t, n, d):
    """Rule 4, looping over every cell of the grid: sorted [row, col] lists."""
    ignited = []
    for r in range(rows):
        for c in range(cols):
            if (r, c) in walls or (r, c) in burning:
                continue
            for name, (dr, dc) in DIRS.items():
                if (r + dr, c + dc) in burning and draw_u(seed, t, r, c, name) * d < n * TWO_64:
                    ignited.append([r, c])
                    break
    return ignited


class Reference:
    def __init__(self, scenario, seed):
        self.rows, self.cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
        self.walls = {tuple(c) for c in scenario["walls"]}
        self.exit_of = {tuple(e["position"]): e["exit_id"] for e in scenario["exits"]}
        self.pos = {p["person_id"]: tuple(p["position"]) for p in scenario["people"]}
        self.status = dict.fromkeys(self.pos, "active")
        self.burning = {tuple(c) for c in scenario["fire"]["ignitions"]}
        n, d = scenario["fire"]["spread_probability"].split("/")
        self.n, self.d = int(n), int(d)
        self.block = scenario["fire"]["enter_fire"] == "block"
        self.horizon = scenario["termination"]["max_steps"]
        self.seed = seed
        self.t = 0
        self.reason = None
        self.trapped = self._trapped()

    def active(self):
        return sorted(p for p in self.pos if self.status[p] == "active")

    def _free(self, cell):
        r, c = cell
        return 0 <= r < self.rows and 0 <= c < self.cols and cell not in self.walls and cell not in self.burning

    def _trapped(self):
        seen = {c for c in self.exit_of if c not in self.burning}
        todo = list(seen)
        while todo:
            r, c = todo.pop()
            for dr, dc in DIRS.values():
                x = (r + dr, c + dc)
                if x not in seen and self._free(x):
                    seen.add(x)
                    todo.append(x)
        return [p for p in self.active() if self.pos[p] not in seen]

    def snapshot(self):
        return {
            "step": self.t,
            "people": [
                {"person_id": p, "status": self.status[p], "position": list(self.pos[p])} for p in sorted(self.pos)
            ],
            "burning": [list(c) for c in sorted(self.burning)],
            "trapped": list(self.trapped),
            "terminated": self.reason is not None,
            "termination_reason": self.reason,
        }

    def observe(self):
        return {
            "observation_version": "1.0",
            "step": self.t + 1,
            "people": [{"person_id": p, "position": list(self.pos[p])} for p in self.active()],
            "burning": [list(c) for c in sorted(self.burning)],
            "trapped": list(self.trapped),
        }

    def step(self, actions):
        t = self.t + 1
        active = self.active()
        occupant = {self.pos[p]: p for p in active}
        outcome, target, cand = {}, {}, {}
        for p in active:
            a = actions[p]
            if a == "stay":
                outcome[p], target[p] = "stayed", None
                continue
            (r, c), (dr, dc) = self.pos[p], DIRS[a]
            x = (r + dr, c + dc)
            target[p] = x
            if not (0 <= x[0] < self.rows and 0 <= x[1] < self.cols):
                outcome[p] = "blocked_boundary"
            elif x in self.walls:
                outcome[p] = "blocked_wall"
            elif x in self.burning and self.block:
                outcome[p] = "blocked_fire"
            else:
                cand[p] = x
        shared = Counter(cand.values())
        for p in list(cand):
            if shared[cand[p]] > 1:
                outcome[p] = "blocked_conflict"
                del cand[p]
        for p in cand:
            q, seen = p, {p}
            while True:
                j = occupant.get(cand[q])
                if j is None:
                    outcome[p] = "moved"
                    break
                if j not in cand:
                    outcome[p] = "blocked_occupied"
                    break
                if j == p:
                    outcome[p] = "blocked_cycle"
                    break
                if j in seen:  # p leads into a cycle it is not on
                    outcome[p] = "blocked_occupied"
                    break
                seen.add(j)
                q = j
        movements = [
            {
                "person_id": p,
                "origin": list(self.pos[p]),
                "target": None if target[p] is None else list(target[p]),
                "outcome": outcome[p],
            }
            for p in active
        ]
        for p in active:
            if outcome[p] == "moved":
                self.pos[p] = target[p]
        casualties, evacuations = [], []
        for p in active:  # rule 2
            if outcome[p] == "moved" and not self.block and self.pos[p] in self.burning:
                self.status[p] = "casualty"
                casualties.append({"person_id": p, "cause": "entered_fire"})
        for p in active:  # rule 3
            if self.status[p] == "active" and self.pos[p] in self.exit_of:
                self.status[p] = "evacuated"
                evacuations.append({"person_id": p, "exit_id": self.exit_of[self.pos[p]]})
        ignited = reference_ignitions(self.rows, self.cols, self.walls, self.burning, self.seed, t, self.n, self.d)
        self.burning |= {tuple(c) for c in ignited}
        for p in active:  # rule 5
            if self.status[p] == "active" and list(self.pos[p]) in ignited:
                self.status[p] = "casualty"
                casualties.append({"person_id": p, "cause": "fire_spread"})
        casualties.sort(key=lambda e: e["person_id"])
        self.t = t
        self.trapped = self._trapped()
        if not self.active():
            self.reason = "all_resolved"
        elif t == self.horizon:
            self.reason = "max_steps"
        return {
            "step": t,
            "actions": {p: actions[p] for p in active},
            "movements": movements,
            "ignitions": ignited,
            "evacuations": evacuations,
            "casualties": casualties,
            "snapshot": self.snapshot(),
        }


def reference_greedy(scenario, observation):
    """§4 greedy, from the observation: BFS from usable exits, people ignored."""
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    walls = {tuple(c) for c in scenario["walls"]}
    burning = {tuple(c) for c in observation["burning"]}

    def free(x):
        return 0 <= x[0] < rows and 0 <= x[1] < cols and x not in walls and x not in burning

    dist = {}
    frontier = [tuple(e["position"]) for e in scenario["exits"] if free(tuple(e["position"]))]
    for x in frontier:
        dist[x] = 0
    while frontier:
        nxt = []
        for r, c in frontier:
            for dr, dc in DIRS.values():
                y = (r + dr, c + dc)
                if free(y) and y not in dist:
                    dist[y] = dist[(r, c)] + 1
                    nxt.append(y)
        frontier = nxt
    actions = {}
    for person in observation["people"]:
        here = tuple(person["position"])
        action = "stay"
        if here in dist:
            for name in ("north", "south", "west", "east"):
                dr, dc = DIRS[name]
                if dist.get((here[0] + dr, here[1] + dc)) == dist[here] - 1:
                    action = name
                    break
        actions[person["person_id"]] = action
    return actions


# ---------------------------------------------------------------------------
# 1. Movement: the golden table.


def case(
    picture,
    actions,
    movements,
    people,
    *,
    pre=(),
    evacuations=(),
    casualties=(),
    ignitions=(),
    trapped=(),
    reason=None,
    id,
    **kwargs,
):
    """movements: {pid: (outcome, target)}; people: {pid: (status, position)} for everyone."""
    return pytest.param(
        {
            "picture": picture,
            "kwargs": kwargs,
            "pre": list(pre),
            "actions": actions,
            "movements": movements,
            "people": people,
            "evacuations": list(evacuations),
            "casualties": list(casualties),
            "ignitions": [list(c) for c in ignitions],
            "trapped": list(trapped),
            "reason": reason,
        },
        id=id,
    )


GOLDEN = [
    case(
        [".ab", "0.."],
        {"a": "west", "b": "west"},
        {"a": ("moved", [0, 0]), "b": ("moved", [0, 1])},
        {"a": ("active", [0, 0]), "b": ("active", [0, 1])},
        id="chain-leader-has-smaller-id",
    ),
    case(
        [".ba", "0.."],
        {"a": "west", "b": "west"},
        {"b": ("moved", [0, 0]), "a": ("moved", [0, 1])},
        {"b": ("active", [0, 0]), "a": ("active", [0, 1])},
        id="chain-leader-has-larger-id",
    ),
    case(
        ["0cab"],
        {"a": "west", "b": "west", "c": "west"},
        {"c": ("moved", [0, 0]), "a": ("moved", [0, 1]), "b": ("moved", [0, 2])},
        {"c": ("evacuated", [0, 0]), "a": ("active", [0, 1]), "b": ("active", [0, 2])},
        evacuations=[("c", "e0")],
        id="chain-of-three-leader-evacuates",
    ),
    case(
        ["sab", "0.."],
        {"a": "west", "b": "west", "s": "stay"},
        {"s": ("stayed", None), "a": ("blocked_occupied", [0, 0]), "b": ("blocked_occupied", [0, 1])},
        {"s": ("active", [0, 0]), "a": ("active", [0, 1]), "b": ("active", [0, 2])},
        id="chain-into-stayer-all-blocked-occupied",
    ),
    case(
        ["#ab", "0.."],
        {"a": "west", "b": "west"},
        {"a": ("blocked_wall", [0, 0]), "b": ("blocked_occupied", [0, 1])},
        {"a": ("active", [0, 1]), "b": ("active", [0, 2])},
        id="chain-into-wall-blocked-person",
    ),
    case(
        ["ab", "0."],
        {"a": "west", "b": "west"},
        {"a": ("blocked_boundary", [0, -1]), "b": ("blocked_occupied", [0, 0])},
        {"a": ("active", [0, 0]), "b": ("active", [0, 1])},
        id="chain-into-boundary-blocked-person",
    ),
    case(
        ["*ab", "0.."],
        {"a": "west", "b": "west"},
        {"a": ("blocked_fire", [0, 0]), "b": ("blocked_occupied", [0, 1])},
        {"a": ("active", [0, 1]), "b": ("active", [0, 2])},
        enter_fire="block",
        id="chain-into-fire-blocked-person",
    ),
    case(
        ["*ab", "0.."],
        {"a": "west", "b": "west"},
        {"a": ("moved", [0, 0]), "b": ("moved", [0, 1])},
        {"a": ("casualty", [0, 0]), "b": ("active", [0, 1])},
        casualties=[("a", "entered_fire")],
        id="chain-led-into-fire-casualty-mode",
    ),
    case(
        ["ab", "0."],
        {"a": "east", "b": "west"},
        {"a": ("blocked_cycle", [0, 1]), "b": ("blocked_cycle", [0, 0])},
        {"a": ("active", [0, 0]), "b": ("active", [0, 1])},
        id="swap-blocked-cycle",
    ),
    case(
        ["ab.", "dc.", "..0"],
        {"a": "east", "b": "south", "c": "west", "d": "north"},
        {
            "a": ("blocked_cycle", [0, 1]),
            "b": ("blocked_cycle", [1, 1]),
            "c": ("blocked_cycle", [1, 0]),
            "d": ("blocked_cycle", [0, 0]),
        },
        {"a": ("active", [0, 0]), "b": ("active", [0, 1]), "c": ("active", [1, 1]), "d": ("active", [1, 0])},
        id="four-cycle-clockwise",
    ),
    case(
        ["ab.", "dc.", "..0"],
        {"a": "south", "d": "east", "c": "north", "b": "west"},
        {
            "a": ("blocked_cycle", [1, 0]),
            "b": ("blocked_cycle", [0, 0]),
            "c": ("blocked_cycle", [0, 1]),
            "d": ("blocked_cycle", [1, 1]),
        },
        {"a": ("active", [0, 0]), "b": ("active", [0, 1]), "c": ("active", [1, 1]), "d": ("active", [1, 0])},
        id="four-cycle-counter-clockwise",
    ),
    case(
        ["eab", ".dc", "..0"],
        {"e": "east", "a": "east", "b": "south", "c": "west", "d": "north"},
        {
            "e": ("blocked_conflict", [0, 1]),
            "d": ("blocked_conflict", [0, 1]),
            "a": ("blocked_occupied", [0, 2]),
            "b": ("blocked_occupied", [1, 2]),
            "c": ("blocked_occupied", [1, 1]),
        },
        {
            "e": ("active", [0, 0]),
            "a": ("active", [0, 1]),
            "b": ("active", [0, 2]),
            "c": ("active", [1, 2]),
            "d": ("active", [1, 1]),
        },
        id="conflict-breaks-a-would-be-cycle",
    ),
    case(
        [".a.", "b.c", "..0"],
        {"a": "south", "b": "east", "c": "west"},
        {"a": ("blocked_conflict", [1, 1]), "b": ("blocked_conflict", [1, 1]), "c": ("blocked_conflict", [1, 1])},
        {"a": ("active", [0, 1]), "b": ("active", [1, 0]), "c": ("active", [1, 2])},
        id="three-way-conflict",
    ),
    case(
        [".a.", "b.c", ".d0"],
        {"a": "south", "b": "east", "c": "west", "d": "north"},
        {k: ("blocked_conflict", [1, 1]) for k in "abcd"},
        {"a": ("active", [0, 1]), "b": ("active", [1, 0]), "c": ("active", [1, 2]), "d": ("active", [2, 1])},
        id="four-way-conflict",
    ),
    case(
        ["a.bc", "0..."],
        {"a": "east", "b": "west", "c": "west"},
        {"a": ("blocked_conflict", [0, 1]), "b": ("blocked_conflict", [0, 1]), "c": ("blocked_occupied", [0, 2])},
        {"a": ("active", [0, 0]), "b": ("active", [0, 2]), "c": ("active", [0, 3])},
        id="conflict-feeding-a-chain",
    ),
    case(
        ["a0b", "c.."],
        {"a": "east", "b": "west", "c": "north"},
        {"a": ("blocked_conflict", [0, 1]), "b": ("blocked_conflict", [0, 1]), "c": ("blocked_occupied", [0, 0])},
        {"a": ("active", [0, 0]), "b": ("active", [0, 2]), "c": ("active", [1, 0])},
        id="conflict-over-an-exit",
    ),
    case(
        ["a.b", "...", "c0d"],
        {"a": "north", "b": "east", "c": "west", "d": "south"},
        {
            "a": ("blocked_boundary", [-1, 0]),
            "b": ("blocked_boundary", [0, 3]),
            "c": ("blocked_boundary", [2, -1]),
            "d": ("blocked_boundary", [3, 2]),
        },
        {"a": ("active", [0, 0]), "b": ("active", [0, 2]), "c": ("active", [2, 0]), "d": ("active", [2, 2])},
        id="out-of-bounds-each-side",
    ),
    case(["a#", "0."], {"a": "east"}, {"a": ("blocked_wall", [0, 1])}, {"a": ("active", [0, 0])}, id="wall"),
    case(
        ["a*", "0."],
        {"a": "east"},
        {"a": ("blocked_fire", [0, 1])},
        {"a": ("active", [0, 0])},
        enter_fire="block",
        id="fire-block-mode",
    ),
    case(
        ["a*", "0."],
        {"a": "east"},
        {"a": ("moved", [0, 1])},
        {"a": ("casualty", [0, 1])},
        casualties=[("a", "entered_fire")],
        reason="all_resolved",
        id="fire-casualty-mode-keeps-burning-cell",
    ),
    case(
        ["a0", ".."],
        {"a": "east"},
        {"a": ("blocked_fire", [0, 1])},
        {"a": ("active", [0, 0])},
        ignitions=(),
        trapped=["a"],
        enter_fire="block",
        fire_extra=[(0, 1)],
        id="burning-exit-block-mode",
    ),
    case(
        ["a0", ".."],
        {"a": "east"},
        {"a": ("moved", [0, 1])},
        {"a": ("casualty", [0, 1])},
        casualties=[("a", "entered_fire")],
        reason="all_resolved",
        fire_extra=[(0, 1)],
        id="burning-exit-casualty-mode",
    ),
    case(
        ["*0a"],
        {"a": "west"},
        {"a": ("moved", [0, 1])},
        {"a": ("evacuated", [0, 1])},
        evacuations=[("a", "e0")],
        ignitions=[(0, 1)],
        reason="all_resolved",
        p="1/1",
        id="exit-ignites-as-person-leaves-casualty-mode",
    ),
    case(
        ["*0a"],
        {"a": "west"},
        {"a": ("moved", [0, 1])},
        {"a": ("evacuated", [0, 1])},
        evacuations=[("a", "e0")],
        ignitions=[(0, 1)],
        reason="all_resolved",
        p="1/1",
        enter_fire="block",
        id="exit-ignites-as-person-leaves-block-mode",
    ),
    case(
        ["*a.0"],
        {"a": "stay"},
        {"a": ("stayed", None)},
        {"a": ("casualty", [0, 1])},
        casualties=[("a", "fire_spread")],
        ignitions=[(0, 1)],
        reason="all_resolved",
        p="1/1",
        id="own-cell-ignites-fire-spread",
    ),
    case(
        ["*.a0"],
        {"a": "west"},
        {"a": ("moved", [0, 1])},
        {"a": ("casualty", [0, 1])},
        casualties=[("a", "fire_spread")],
        ignitions=[(0, 1)],
        reason="all_resolved",
        p="1/1",
        id="moved-onto-cell-that-ignites-fire-spread",
    ),
    case(
        ["*a.0"],
        {"a": "east"},
        {"a": ("moved", [0, 2])},
        {"a": ("active", [0, 2])},
        ignitions=[(0, 1)],
        p="1/1",
        id="moved-off-cell-that-ignites",
    ),
    case(
        ["a0b"],
        {"b": "west"},
        {"b": ("moved", [0, 1])},
        {"a": ("evacuated", [0, 1]), "b": ("evacuated", [0, 1])},
        pre=[{"a": "east", "b": "stay"}],
        evacuations=[("b", "e0")],
        reason="all_resolved",
        id="onto-exit-where-evacuee-stands",
    ),
    case(
        ["a*b", "0.."],
        {"b": "west"},
        {"b": ("moved", [0, 1])},
        {"a": ("casualty", [0, 1]), "b": ("casualty", [0, 1])},
        pre=[{"a": "east", "b": "stay"}],
        casualties=[("b", "entered_fire")],
        reason="all_resolved",
        id="onto-cell-where-casualty-stands",
    ),
    case(
        ["1ab0"],
        {"a": "west", "b": "east"},
        {"a": ("moved", [0, 0]), "b": ("moved", [0, 3])},
        {"a": ("evacuated", [0, 0]), "b": ("evacuated", [0, 3])},
        evacuations=[("a", "e1"), ("b", "e0")],
        reason="all_resolved",
        id="evacuation-names-its-exit",
    ),
    case(
        ["a.", "0."],
        {"a": "stay"},
        {"a": ("stayed", None)},
        {"a": ("active", [0, 0])},
        max_steps=1,
        reason="max_steps",
        id="stay-at-horizon",
    ),
]


@pytest.mark.parametrize("c", GOLDEN)
def test_movement_golden(c):
    kwargs = dict(c["kwargs"])
    extra = kwargs.pop("fire_extra", ())
    sim = Simulator(picture_scenario(c["picture"], ignitions=extra, **kwargs), seed=0)
    for actions in c["pre"]:
        sim.step(actions)
    before = {p["person_id"]: p["position"] for p in sim.observe()["people"]}
    burning_before = sim.observe()["burning"]

    step = sim.step(c["actions"])

    assert step["actions"] == c["actions"]
    assert step["movements"] == [
        {"person_id": pid, "origin": before[pid], "target": target, "outcome": outcome}
        for pid, (outcome, target) in sorted(c["movements"].items())
    ]
    assert step["evacuations"] == [{"person_id": p, "exit_id": e} for p, e in c["evacuations"]]
    assert step["casualties"] == [{"person_id": p, "cause": cause} for p, cause in c["casualties"]]
    assert step["ignitions"] == c["ignitions"]
    snap = step["snapshot"]
    assert snap["people"] == [
        {"person_id": pid, "status": status, "position": pos} for pid, (status, pos) in sorted(c["people"].items())
    ]
    assert snap["burning"] == sorted(burning_before + c["ignitions"])
    assert snap["trapped"] == c["trapped"]
    assert snap["terminated"] is (c["reason"] is not None)
    assert snap["termination_reason"] == c["reason"]


def test_resolve_order_does_not_depend_on_action_key_order():
    sc = picture_scenario(["eab", ".dc", "..0"])
    acts = {"e": "east", "a": "east", "b": "south", "c": "west", "d": "north"}
    a = Simulator(sc, 0).step(acts)
    b = Simulator(sc, 0).step(dict(reversed(list(acts.items()))))
    assert canonical_json(a) == canonical_json(b)


# ---------------------------------------------------------------------------
# 2. Fire.


def test_fire_draw_test_vector():
    assert fire_draw(0, 1, 0, 0, "north") == 6788907571189055452
    assert draw_u(0, 1, 0, 0, "north") == 6788907571189055452


@pytest.mark.parametrize("args", [(0, 1, 0, 0, "east"), (2**64 - 1, 7, 3, 11, "west"), (12345, 100, 0, 0, "south")])
def test_fire_draw_formula(args):
    assert fire_draw(*args) == draw_u(*args)


FIRE_PICTURE = [
    "0...........",
    "............",
    "..####......",
    "..#..#..*...",
    "..#..#......",
    "..##.#......",
    "........*...",
    ".....#####..",
    "............",
    "............",
    "...........a",
    "..........#1",
]


def frontier(rows, cols, walls, burning):
    return sorted(
        [r, c]
        for r in range(rows)
        for c in range(cols)
        if (r, c) not in walls
        and (r, c) not in burning
        and any((r + dr, c + dc) in burning for dr, dc in DIRS.values())
    )


def run_stay(sc, seed, steps):
    sim = Simulator(sc, seed)
    out = []
    for _ in range(steps):
        if sim.terminated:
            break
        out.append(sim.step(stay_all(sim.observe())))
    return out


def test_p_zero_never_spreads():
    sc = picture_scenario(FIRE_PICTURE, p="0/1", max_steps=30)
    steps = run_stay(sc, 5, 30)
    assert len(steps) == 30
    for st_ in steps:
        assert st_["ignitions"] == []
        assert st_["snapshot"]["burning"] == [[3, 8], [6, 8]]


@pytest.mark.parametrize("p", ["1/1", "4294967296/4294967296", "7/7"])
def test_p_one_ignites_the_whole_frontier_each_step(p):
    sc = picture_scenario(FIRE_PICTURE, p=p, max_steps=40, enter_fire="block")
    walls = {tuple(c) for c in sc["walls"]}
    burning = {tuple(c) for c in sc["fire"]["ignitions"]}
    steps = run_stay(sc, 3, 40)
    assert steps, "the episode must run"
    for st_ in steps:
        expected = frontier(12, 12, walls, burning)
        assert st_["ignitions"] == expected
        burning |= {tuple(c) for c in expected}
        assert st_["snapshot"]["burning"] == sorted([list(c) for c in burning])


@pytest.mark.parametrize("seed", [0, 1, 2**64 - 1])
@pytest.mark.parametrize("p", ["1/3", "2/5", "1/4294967296", "4294967295/4294967296"])
def test_ignitions_match_rule_4_reimplementation(seed, p):
    sc = picture_scenario(FIRE_PICTURE, p=p, max_steps=25, enter_fire="block")
    walls = {tuple(c) for c in sc["walls"]}
    burning = {tuple(c) for c in sc["fire"]["ignitions"]}
    n, d = map(int, p.split("/"))
    steps = run_stay(sc, seed, 25)
    for st_ in steps:
        expected = reference_ignitions(12, 12, walls, burning, seed, st_["step"], n, d)
        assert st_["ignitions"] == expected, f"step {st_['step']}"
        burning |= {tuple(c) for c in expected}
        assert st_["snapshot"]["burning"] == sorted([list(c) for c in burning])


@pytest.mark.parametrize("above", [False, True])
def test_threshold_is_exact(above):
    # Only [1,0] is on the frontier, with one burning neighbour to its north.
    sc = make_scenario(3, 3, people={"a": (1, 2)}, exits={"x": (2, 2)}, walls=[(0, 1)], ignitions=[(0, 0)])
    seed = 42
    u = fire_draw(seed, 1, 1, 0, "north")
    n = (u >> 32) + (1 if above else 0)  # u * 2^32 < n * 2^64  <=>  u < n * 2^32
    sc["fire"]["spread_probability"] = f"{n}/{2**32}"
    step = Simulator(sc, seed).step({"a": "stay"})
    assert step["ignitions"] == ([[1, 0]] if above else [])


POCKETS = [
    "0.......#a",
    "........##",
    "...*......",
    "..........",
    "......*...",
    "##........",
    "b#.......1",
]


def pocket_scenario(extra_people=(), p="1/2"):
    sc = picture_scenario(POCKETS, p=p, max_steps=30)
    for pid, pos in extra_people:
        sc["people"].append({"person_id": pid, "position": list(pos)})
    return sc


def ignition_log(sc, seed, policy):
    sim = Simulator(sc, seed)
    log = []
    while not sim.terminated:
        log.append(sim.step(policy(sim.observe()))["ignitions"])
    return log


def test_fire_draws_do_not_depend_on_people_or_actions():
    base = ignition_log(pocket_scenario(), 9, stay_all)
    assert len(base) == 30 and any(base)
    crowd = pocket_scenario([("c", (3, 4)), ("d", (4, 5)), ("e", (2, 2)), ("f", (0, 5)), ("g", (6, 3))])
    assert ignition_log(crowd, 9, make_policy("random", crowd, 4)) == base
    assert ignition_log(crowd, 9, make_policy("greedy", crowd, 4)) == base
    assert ignition_log(pocket_scenario(), 9, make_policy("random", pocket_scenario(), 77)) == base


def test_different_seeds_give_different_fire():
    logs = {seed: ignition_log(pocket_scenario(), seed, stay_all) for seed in (0, 1, 2)}
    assert logs[0] != logs[1] and logs[1] != logs[2] and logs[0] != logs[2]


# ---------------------------------------------------------------------------
# 3. Trapped set and termination.


@pytest.mark.parametrize(
    "picture, extra, trapped",
    [
        (["0abc"], [], []),  # people never block the path
        (["0#a"], [], ["a"]),  # walled off
        (["0*a"], [], ["a"]),  # fire cuts the corridor
        (["0.a"], [(0, 0)], ["a"]),  # the only exit burns: not usable
        (["0.a.1"], [(0, 0)], []),  # another exit is usable
        (["0.#a1"], [(0, 4)], ["a"]),  # the only exit a reaches burns
        (["a.", "*.", ".0"], [], []),  # detour around the fire
        (["a*", "*.", ".0"], [], ["a"]),  # fire cuts every path, diagonal gaps do not count
    ],
    ids=[
        "people-never-block",
        "wall",
        "fire",
        "burning-exit",
        "other-exit",
        "reachable-exit-burns",
        "detour",
        "no-diagonals",
    ],
)
def test_trapped_set_rule_6(picture, extra, trapped):
    sim = Simulator(picture_scenario(picture, ignitions=extra), 0)
    assert sim.initial_state["trapped"] == trapped
    assert sim.observe()["trapped"] == trapped


def test_trapped_set_updates_when_fire_cuts_the_path():
    sc = picture_scenario(["a..*", "#.##", "#.0#"], p="1/1")
    sim = Simulator(sc, 0)
    assert sim.initial_state["trapped"] == []
    step = sim.step({"a": "stay"})  # [0,2] ignites: the path through [0,1] still exists
    assert step["ignitions"] == [[0, 2]] and step["snapshot"]["trapped"] == []
    step = sim.step({"a": "stay"})  # [0,1] ignites: a is cut off
    assert step["ignitions"] == [[0, 1]] and step["snapshot"]["trapped"] == ["a"]


def test_max_steps_terminates_at_horizon():
    sim = Simulator(picture_scenario(["a.0"], max_steps=3), 0)
    for t in (1, 2):
        snap = sim.step({"a": "stay"})["snapshot"]
        assert (snap["step"], snap["terminated"], snap["termination_reason"]) == (t, False, None)
        assert not sim.terminated and sim.final_state is None
    snap = sim.step({"a": "stay"})["snapshot"]
    assert (snap["terminated"], snap["termination_reason"]) == (True, "max_steps")
    assert sim.terminated


def test_all_resolved_terminates_early():
    sim = Simulator(picture_scenario(["a.0"], max_steps=10), 0)
    sim.step({"a": "east"})
    assert not sim.terminated
    snap = sim.step({"a": "east"})["snapshot"]
    assert (snap["step"], snap["termination_reason"], snap["terminated"]) == (2, "all_resolved", True)


def test_all_resolved_takes_precedence_at_horizon():
    sim = Simulator(picture_scenario(["a0"], max_steps=1), 0)
    assert sim.step({"a": "east"})["snapshot"]["termination_reason"] == "all_resolved"


def test_after_termination_step_and_observe_raise():
    sim = Simulator(picture_scenario(["a0"], max_steps=5), 0)
    assert sim.initial_state["terminated"] is False and sim.initial_state["termination_reason"] is None
    assert sim.final_state is None
    last = sim.step({"a": "east"})
    for bad in ({}, {"a": "stay"}, {"a": "east"}):
        with pytest.raises(ActionError):
            sim.step(bad)
    with pytest.raises(ActionError):
        sim.observe()
    snap = last["snapshot"]
    assert sim.final_state == {
        "step": snap["step"],
        "people": snap["people"],
        "trapped": snap["trapped"],
        "termination_reason": snap["termination_reason"],
    }
    assert sim.final_state == {
        "step": 1,
        "people": [{"person_id": "a", "status": "evacuated", "position": [0, 1]}],
        "trapped": [],
        "termination_reason": "all_resolved",
    }


def test_final_state_after_max_steps_keeps_trapped():
    sim = Simulator(picture_scenario(["0#a"], max_steps=2), 0)
    sim.step({"a": "stay"})
    assert sim.final_state is None
    last = sim.step({"a": "west"})
    assert last["movements"][0]["outcome"] == "blocked_wall"
    assert sim.final_state == {
        "step": 2,
        "people": [{"person_id": "a", "status": "active", "position": [0, 2]}],
        "trapped": ["a"],
        "termination_reason": "max_steps",
    }


# ---------------------------------------------------------------------------
# 4. Action errors change nothing.

ERR_SCENARIO = ["*...0", "..b.c", "a...."]


def advanced():
    sim = Simulator(picture_scenario(ERR_SCENARIO, p="1/2", max_steps=10), 11)
    sim.step({"a": "stay", "b": "east", "c": "north"})  # c evacuates at step 1
    return sim


BAD_ACTIONS = [
    pytest.param({"a": "stay"}, id="missing-active-person"),
    pytest.param({"b": "stay", "c": "stay"}, id="missing-first-person"),
    pytest.param({"a": "stay", "b": "stay", "zz": "stay"}, id="unknown-extra-id"),
    pytest.param({"a": "stay", "b": "stay", "c": "stay"}, id="action-for-resolved-person"),
    pytest.param({"a": "stay", "b": "stay", 1: "stay"}, id="non-string-extra-key"),
    pytest.param({"a": "stay", "b": "up"}, id="unknown-action"),
    pytest.param({"a": "stay", "b": "Stay"}, id="action-wrong-case"),
    pytest.param({"a": "stay", "b": None}, id="action-null"),
    pytest.param({"a": "stay", "b": ["stay"]}, id="action-list"),
    pytest.param({"a": "north", "b": 0}, id="action-integer"),
    pytest.param([("a", "stay"), ("b", "stay")], id="list-of-pairs"),
    pytest.param(None, id="none"),
    pytest.param("stay", id="string"),
]


@pytest.mark.parametrize("bad", BAD_ACTIONS)
def test_action_error_changes_nothing(bad):
    sim, fresh = advanced(), advanced()
    assert sim.observe()["people"] == [{"person_id": "a", "position": [2, 0]}, {"person_id": "b", "position": [1, 3]}]
    with pytest.raises(ActionError):
        sim.step(bad)
    assert sim.observe() == fresh.observe()
    assert not sim.terminated and sim.final_state is None
    good = {"a": "south", "b": "north"}
    assert canonical_json(sim.step(good)) == canonical_json(fresh.step(good))
    assert sim.observe() == fresh.observe()


def test_action_error_at_step_one_then_full_run_identical():
    sc = picture_scenario(ERR_SCENARIO, p="1/2", max_steps=6)
    out = io.BytesIO()
    sim = Simulator(sc, 3)
    with pytest.raises(ActionError):
        sim.step({"a": "stay"})
    policy = make_policy("random", sc, 8)
    steps = []
    while not sim.terminated:
        steps.append(sim.step(policy(sim.observe())))
    run_episode(sc, make_policy("random", sc, 8), 3, out)
    assert canonical_record(sim.header, sim.initial_state, steps, sim.final_state) == out.getvalue()


# ---------------------------------------------------------------------------
# 5. Determinism.


def record_bytes(sc, policy_name, seed, policy_seed=None):
    out = io.BytesIO()
    run_episode(
        sc, make_policy(policy_name, load_scenario(sc), seed if policy_seed is None else policy_seed), seed, out
    )
    return out.getvalue()


@pytest.mark.parametrize("policy", ["stay", "random", "greedy"])
def test_same_inputs_same_bytes(policy):
    sc = load_scenario("builtin:small-room")
    assert record_bytes(sc, policy, 123) == record_bytes(sc, policy, 123)
    assert record_bytes(sc, policy, 2**64 - 1) == record_bytes(json.dumps(sc), policy, 2**64 - 1)


def test_different_seeds_different_records():
    sc = pocket_scenario()
    a, b = record_bytes(sc, "stay", 1), record_bytes(sc, "stay", 2)
    fire_a = [json.loads(line.rstrip(b",\n"))["ignitions"] for line in a.splitlines(keepends=True)[3:-2]]
    fire_b = [json.loads(line.rstrip(b",\n"))["ignitions"] for line in b.splitlines(keepends=True)[3:-2]]
    assert len(fire_a) == len(fire_b) == 30 and fire_a != fire_b


def permuted(sc, rng):
    sc = json.loads(json.dumps(sc))
    for key in ("walls", "exits", "people"):
        rng.shuffle(sc[key])
    rng.shuffle(sc["fire"]["ignitions"])
    return sc


def reverse_key_order(value):
    if isinstance(value, dict):
        return {k: reverse_key_order(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reverse_key_order(v) for v in value]
    return value


def reversed_actions(policy):
    return lambda obs: dict(reversed(list(policy(obs).items())))


@pytest.mark.parametrize("name", ["office", "small-room", "bottleneck"])
@pytest.mark.parametrize("policy", ["greedy", "random"])
def test_list_and_key_order_do_not_change_results(name, policy):
    sc = load_scenario(f"builtin:{name}")
    # More than one ignition, so that their order is shuffled too.
    taken = sc["walls"] + sc["fire"]["ignitions"] + [x["position"] for x in sc["people"] + sc["exits"]]
    sc["fire"]["ignitions"] += [c for c in ([5, 5], [6, 6], [2, 3]) if c not in taken]
    assert len(sc["fire"]["ignitions"]) >= 2
    sc["termination"]["max_steps"] = 60
    other = permuted(sc, random.Random(name))
    assert other != sc
    keyed = reverse_key_order(sc)

    # The hash covers canonical JSON: key order is irrelevant, list order is kept.
    assert scenario_hash(keyed) == scenario_hash(sc)
    assert scenario_hash(other) != scenario_hash(sc)

    base = io.BytesIO()
    run_episode(sc, make_policy(policy, sc, 5), 5, base)
    perm = io.BytesIO()
    run_episode(other, reversed_actions(make_policy(policy, other, 5)), 5, perm)
    key = io.BytesIO()
    run_episode(keyed, reversed_actions(make_policy(policy, keyed, 5)), 5, key)

    assert key.getvalue() == base.getvalue()
    a, b = base.getvalue().splitlines(keepends=True), perm.getvalue().splitlines(keepends=True)
    assert len(a) == len(b) > 5
    assert a[1:] == b[1:]
    head_a, head_b = json.loads(a[0][len(b'{"header":') : -2]), json.loads(b[0][len(b'{"header":') : -2])
    assert head_a["scenario_hash"] == scenario_hash(sc)
    assert head_b["scenario_hash"] == scenario_hash(other)
    assert {**head_a, "scenario_hash": None} == {**head_b, "scenario_hash": None}


# ---------------------------------------------------------------------------
# 6. Observation and built-in policies.


def test_observation_exact_contents():
    sc = make_scenario(
        3,
        4,
        people={"p2": (0, 0), "p10": (1, 0), "B": (1, 3)},
        exits={"door": (2, 0)},
        walls=[(0, 3), (1, 2)],
        ignitions=[(2, 2), (0, 2)],
        p="0/1",
    )
    sim = Simulator(sc, 17)
    obs = sim.observe()
    assert obs == {
        "observation_version": "1.0",
        "step": 1,
        "people": [
            {"person_id": "B", "position": [1, 3]},
            {"person_id": "p10", "position": [1, 0]},
            {"person_id": "p2", "position": [0, 0]},
        ],
        "burning": [[0, 2], [2, 2]],
        "trapped": ["B"],
    }
    assert sim.observe() == obs  # observing changes nothing
    sim.step({"B": "stay", "p10": "south", "p2": "south"})
    assert sim.observe() == {
        "observation_version": "1.0",
        "step": 2,
        "people": [{"person_id": "B", "position": [1, 3]}, {"person_id": "p2", "position": [1, 0]}],
        "burning": [[0, 2], [2, 2]],
        "trapped": ["B"],
    }
    header = sim.header
    assert header == {
        "schema_version": "1.0",
        "simulator_version": "1.0",
        "observation_version": "1.0",
        "scenario_id": "test",
        "scenario_hash": scenario_hash(sc),
        "seed": 17,
    }


GREEDY_CASES = [
    (["..0", "...", "a.."], "north"),  # north and east both lead on: north first
    ([".a.", "0..", "..."], "south"),  # south and west: south first
    (["0.a.1"], "west"),  # west and east: west first
    (["a..", "..0"], "south"),  # south and east: south first
    (["0", ".", "a", ".", "1"], "north"),  # north and south: north first
    (["a.0"], "east"),
    (["0.*", "..a"], "west"),  # around the fire
    (["0#a", "..."], "south"),  # around the wall
    (["0ba"], "west"),  # people ignored
    (["0#a"], "stay"),  # no exit reachable
    (["0*a"], "stay"),  # fire cuts the only path
]


@pytest.mark.parametrize(
    "picture, expected", GREEDY_CASES, ids=[f"greedy-{i}-{e}" for i, (_, e) in enumerate(GREEDY_CASES)]
)
def test_greedy_policy(picture, expected):
    sc = picture_scenario(picture)
    obs = Simulator(sc, 0).observe()
    actions = make_policy("greedy", sc, 0)(obs)
    assert set(actions) == {p["person_id"] for p in obs["people"]}
    assert actions["a"] == expected
    assert actions == reference_greedy(sc, obs)


def test_greedy_ignores_burning_exit_and_goes_to_usable_one():
    sc = picture_scenario(["0a...1"], ignitions=[(0, 0)])
    sim = Simulator(sc, 0)
    assert make_policy("greedy", sc, 0)(sim.observe()) == {"a": "east"}
    sc = picture_scenario(["0a"], ignitions=[(0, 0)])
    assert make_policy("greedy", sc, 0)(Simulator(sc, 0).observe()) == {"a": "stay"}


def test_greedy_replans_as_fire_grows():
    sc = picture_scenario(["......", ".a..*.", "0....1"], p="1/2", max_steps=12)
    sim, policy = Simulator(sc, 4), make_policy("greedy", sc, 4)
    while not sim.terminated:
        obs = sim.observe()
        acts = policy(obs)
        assert acts == reference_greedy(sc, obs)
        sim.step(acts)


def random_actions(policy_seed, observations):
    policy = make_policy("random", pocket_scenario(), policy_seed)
    return [policy(obs) for obs in observations]


def test_random_policy_is_seeded_and_independent():
    sc = pocket_scenario()
    sim = Simulator(sc, 0)
    obs = sim.observe()
    observations = [obs] * 40
    random.seed(1)
    a = random_actions(7, observations)
    random.seed(2)
    random.random()
    b = random_actions(7, observations)
    assert a == b
    assert random_actions(8, observations) != a
    assert {act for acts in a for act in acts.values()} == set(ACTIONS)
    assert all(set(acts) == {"a", "b"} for acts in a)


def test_random_policy_does_not_use_the_fire_rng():
    # Two people sealed in pockets: the fire never reaches them, so the
    # observations' people are the same whatever the fire does.
    def actions_log(p, seed):
        sc = pocket_scenario(p=p)
        sim, policy, log = Simulator(sc, seed), make_policy("random", sc, 5), []
        while not sim.terminated:
            log.append(policy(sim.observe()))
            sim.step(log[-1])
        return log

    base = actions_log("0/1", 0)
    assert len(base) == 30
    assert actions_log("1/2", 0) == base
    assert actions_log("1/2", 99) == base
    assert actions_log("1/1", 3) == base


# ---------------------------------------------------------------------------
# 7. The record writer.


class FlushLog:
    """A binary stream that remembers its content at every flush."""

    def __init__(self):
        self.data = bytearray()
        self.flushes = []

    def write(self, chunk):
        self.data += chunk
        return len(chunk)

    def flush(self):
        self.flushes.append(bytes(self.data))


def drive(sc, policy, seed):
    sim = Simulator(sc, seed)
    steps = []
    while not sim.terminated:
        steps.append(sim.step(policy(sim.observe())))
    return sim, steps


@pytest.mark.parametrize("name", ["small-room", "office", "bottleneck"])
@pytest.mark.parametrize("policy", ["greedy", "random", "stay"])
def test_run_episode_equals_canonical_record(name, policy):
    sc = load_scenario(f"builtin:{name}")
    sc["termination"]["max_steps"] = min(sc["termination"]["max_steps"], 80)
    sim, steps = drive(sc, make_policy(policy, sc, 21), 21)
    expected = canonical_record(sim.header, sim.initial_state, steps, sim.final_state)
    out = io.BytesIO()
    run_episode(sc, make_policy(policy, sc, 21), 21, out)
    assert out.getvalue() == expected

    value = json.loads(out.getvalue())
    assert list(value) == ["header", "initial_state", "steps", "final_state"]
    assert value == {
        "header": sim.header,
        "initial_state": sim.initial_state,
        "steps": steps,
        "final_state": sim.final_state,
    }

    lines = out.getvalue().splitlines(keepends=True)
    T = len(steps)
    assert len(lines) == T + 5
    assert lines[0].startswith(b'{"header":') and lines[0].endswith(b",\n")
    assert lines[1].startswith(b'"initial_state":') and lines[1].endswith(b",\n")
    assert lines[2] == b'"steps":[\n'
    assert lines[3 + T] == b"],\n"
    assert lines[4 + T].startswith(b'"final_state":') and lines[4 + T].endswith(b"}\n")
    parts = [
        (sim.header, lines[0][len(b'{"header":') : -2]),
        (sim.initial_state, lines[1][len(b'"initial_state":') : -2]),
        *[(s, line[:-2] if k < T - 1 else line[:-1]) for k, (s, line) in enumerate(zip(steps, lines[3 : 3 + T]))],
        (sim.final_state, lines[4 + T][len(b'"final_state":') : -2]),
    ]
    for value, raw in parts:
        assert json.loads(canonical_json(value)) == value
        assert canonical_json(json.loads(raw)) == raw
        assert json.loads(raw) == value
        assert b"\n" not in raw


def test_writer_flushes_every_line_as_it_goes():
    sc = picture_scenario(ERR_SCENARIO, p="1/3", max_steps=8)
    sim, steps = drive(sc, make_policy("random", sc, 2), 6)
    full = canonical_record(sim.header, sim.initial_state, steps, sim.final_state)
    lines = full.splitlines(keepends=True)
    T = len(steps)
    assert T >= 2
    log = FlushLog()
    inner = make_policy("random", sc, 2)
    seen = []

    def watching(obs):
        # Before step t is taken, header, initial state and steps 1..t-1 are out.
        t = obs["step"]
        assert log.flushes, "nothing was flushed before the first decision"
        assert bytes(log.data) == log.flushes[-1], "written bytes not flushed"
        assert log.flushes[-1] == b"".join(lines[: 3 + t - 1])
        seen.append(t)
        return inner(obs)

    run_episode(sc, watching, 6, log)
    assert seen == list(range(1, T + 1))
    assert log.flushes[-1] == bytes(log.data) == full
    for k, flushed in enumerate(log.flushes):
        assert flushed.endswith(b"\n")
        assert full.startswith(flushed)
        if k:
            assert len(flushed) > len(log.flushes[k - 1])
    # Each step k < T was flushed on its own, ending right after its line.
    ends = {len(f) for f in log.flushes}
    for k in range(1, T):
        assert len(b"".join(lines[: 3 + k])) in ends


def test_run_episode_to_a_path(tmp_path):
    sc = load_scenario("builtin:small-room")
    expected = record_bytes(sc, "greedy", 4)
    target = tmp_path / "run.json"
    run_episode(sc, make_policy("greedy", sc, 4), 4, target)
    assert target.read_bytes() == expected
    run_episode(sc, make_policy("greedy", sc, 4), 4, str(tmp_path / "run2.json"))
    assert (tmp_path / "run2.json").read_bytes() == expected
    with open(tmp_path / "run3.json", "wb") as handle:
        run_episode(sc, make_policy("greedy", sc, 4), 4, handle)
    assert (tmp_path / "run3.json").read_bytes() == expected


def test_builtin_scenarios_run_and_record():
    for name in builtin_names():
        sc = load_scenario(f"builtin:{name}")
        sc["termination"]["max_steps"] = 3
        out = io.BytesIO()
        run_episode(sc, make_policy("greedy", sc, 0), 0, out)
        value = json.loads(out.getvalue())
        assert value["header"]["scenario_id"] == sc["scenario_id"]
        assert 1 <= len(value["steps"]) <= 3


# ---------------------------------------------------------------------------
# Properties on random small scenarios.


def actions_for(plan_row, active_ids, all_ids, reverse):
    index = {pid: k for k, pid in enumerate(all_ids)}
    acts = {pid: plan_row[index[pid]] for pid in active_ids}
    return dict(reversed(list(acts.items()))) if reverse else acts


PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(episodes())
def test_matches_reference_model(episode):
    sc, seed, plan = episode
    sim, ref = Simulator(sc, seed), Reference(sc, seed)
    all_ids = sorted(p["person_id"] for p in sc["people"])
    assert sim.initial_state == ref.snapshot()
    for t, row in enumerate(plan, start=1):
        if ref.reason is not None:
            break
        assert sim.observe() == ref.observe()
        acts = actions_for(row, ref.active(), all_ids, reverse=t % 2 == 0)
        assert canonical_json(sim.step(acts)) == canonical_json(ref.step(acts))
    assert sim.terminated and ref.reason is not None
    snap = ref.snapshot()
    assert sim.final_state == {k: snap[k] for k in ("step", "people", "trapped", "termination_reason")}


@PROPERTY
@given(episodes())
def test_step_invariants(episode):
    sc, seed, plan = episode
    sim = Simulator(sc, seed)
    all_ids = sorted(p["person_id"] for p in sc["people"])
    walls = {tuple(c) for c in sc["walls"]}
    exits = {tuple(e["position"]): e["exit_id"] for e in sc["exits"]}
    rows, cols = sc["grid"]["rows"], sc["grid"]["cols"]
    prev = sim.initial_state
    for t, row in enumerate(plan, start=1):
        if sim.terminated:
            break
        active = [p["person_id"] for p in prev["people"] if p["status"] == "active"]
        step = sim.step(actions_for(row, active, all_ids, reverse=False))
        snap = step["snapshot"]
        assert step["step"] == snap["step"] == t
        before = {p["person_id"]: p for p in prev["people"]}
        after = {p["person_id"]: p for p in snap["people"]}
        assert [p["person_id"] for p in snap["people"]] == all_ids
        # movements cover exactly the active people, stay <=> stayed <=> null target, target = origin + action
        assert [m["person_id"] for m in step["movements"]] == active
        for m in step["movements"]:
            a = step["actions"][m["person_id"]]
            assert m["origin"] == before[m["person_id"]]["position"]
            assert (a == "stay") == (m["outcome"] == "stayed") == (m["target"] is None)
            if a != "stay":
                dr, dc = DIRS[a]
                assert m["target"] == [m["origin"][0] + dr, m["origin"][1] + dc]
            end = m["target"] if m["outcome"] == "moved" else m["origin"]
            assert after[m["person_id"]]["position"] == end
        ends = [tuple(after[pid]["position"]) for pid in active]
        assert len(set(ends)) == len(ends), "two people ended the movement phase in one cell"
        # burning only grows by the ignitions, which are new and not walls
        old, new = {tuple(c) for c in prev["burning"]}, {tuple(c) for c in snap["burning"]}
        ign = [tuple(c) for c in step["ignitions"]]
        assert len(set(ign)) == len(ign) and not (set(ign) & old) and not (set(ign) & walls)
        assert new == old | set(ign) and snap["burning"] == sorted(snap["burning"])
        assert all(0 <= r < rows and 0 <= c < cols for r, c in ign)
        # statuses only go active -> resolved, and each change has exactly one event
        events = Counter([e["person_id"] for e in step["evacuations"]] + [e["person_id"] for e in step["casualties"]])
        for pid in all_ids:
            b, a = before[pid], after[pid]
            if b["status"] != "active":
                assert a == b
                assert events[pid] == 0
            elif a["status"] == "active":
                assert events[pid] == 0
                assert tuple(a["position"]) not in new and tuple(a["position"]) not in exits
            else:
                assert events[pid] == 1
        for e in step["evacuations"]:
            assert after[e["person_id"]]["status"] == "evacuated"
            assert exits[tuple(after[e["person_id"]]["position"])] == e["exit_id"]
        for e in step["casualties"]:
            assert after[e["person_id"]]["status"] == "casualty"
            assert tuple(after[e["person_id"]]["position"]) in new
        for key in ("evacuations", "casualties", "movements"):
            ids = [e["person_id"] for e in step[key]]
            assert ids == sorted(ids)
        still = [pid for pid in all_ids if after[pid]["status"] == "active"]
        assert set(snap["trapped"]) <= set(still) and snap["trapped"] == sorted(snap["trapped"])
        assert snap["terminated"] == (not still or t == sc["termination"]["max_steps"])
        prev = snap


@settings(max_examples=80, deadline=None)
@given(small_scenarios(), st.integers(0, 2**64 - 1))
def test_greedy_matches_reference_on_random_scenarios(sc, seed):
    sim, policy = Simulator(sc, seed), make_policy("greedy", sc, seed)
    while not sim.terminated:
        obs = sim.observe()
        acts = policy(obs)
        assert acts == reference_greedy(sc, obs)
        sim.step(acts)
