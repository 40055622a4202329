"""Stage 2: each transition is consistent with the rules (record data only).

These checks read the record and the scenario; they never re-derive why a
move was blocked or whether the RNG would ignite a cell (that is replay's).
Each is an accumulator; ``step_checks`` gives their order within a step.

A *replayed* transition (``tr.replayed``: the step's bytes are the replaying
simulator's own canonical step, taken after a record prefix that was
byte-identical to the simulator's too) is the simulator's output, which
obeys every rule below by construction; re-checking it could only find a
simulator bug.  Such a transition therefore reaches only the checks that
carry state from step to step (``replayed_step_checks``), which update that
state and check nothing (docs/decisions.md, "Replayed steps").
"""

from ..accumulator import Accumulator
from ..grid.cells import DELTAS
from ..grid.reachability import ExitReachability
from .shape import fail


def _cell(index, cols):
    return [index // cols, index % cols]


def expected_trapped(scenario, state, reach):
    ids = scenario.person_ids
    return [ids[i] for i in state.active if not reach[state.position[i]]]


def check_initial_state(state, scenario):
    """s_0: step 0, everyone active at the scenario position, burning = ignitions."""
    path = "$.initial_state"
    if state.step != 0:
        fail(f"{path}.step", f"expected 0, got {state.step}.")
    cols = scenario.grid.cols
    for i, pid in enumerate(scenario.person_ids):
        if state.status[i] != "active":
            fail(f"{path}.people[{i}].status", f"expected 'active' for {pid!r} at step 0, got {state.status[i]!r}.")
        if state.position[i] != scenario.start_cells[i]:
            fail(
                f"{path}.people[{i}].position",
                f"expected {pid!r} at its scenario position {_cell(scenario.start_cells[i], cols)}, got "
                f"{_cell(state.position[i], cols)}.",
            )
    ignitions = [_cell(c, cols) for c in scenario.ignitions]
    if state.burning != ignitions:
        fail(f"{path}.burning", f"expected the scenario's ignitions {ignitions}, got {state.burning}.")
    if state.terminated or state.reason is not None:
        fail(
            f"{path}.terminated",
            "expected the initial state not to be terminated (terminated false, termination_reason null).",
        )


class StepNumbering(Accumulator):
    def update(self, tr):
        if tr.prev.terminated:
            fail(
                tr.path,
                f"the episode terminated at step {tr.prev.step} ({tr.prev.reason}); only the last snapshot may be "
                f"terminated, yet step {tr.t} follows.",
            )
        if tr.step["step"] != tr.t:
            fail(
                f"{tr.path}.step", f"expected step number {tr.t} (steps are numbered 1, 2, ...), got {tr.step['step']}."
            )
        if tr.cur.step != tr.t:
            fail(f"{tr.path}.snapshot.step", f"expected {tr.t}, the step's own number, got {tr.cur.step}.")


class Coverage(Accumulator):
    """Actions and movements cover exactly A(s_{t-1})."""

    def __init__(self, scenario):
        self.ids = scenario.person_ids

    def update(self, tr):
        ids = self.ids
        active = [ids[i] for i in tr.prev.active]
        actions = tr.step["actions"]
        if len(actions) != len(active) or any(pid not in actions for pid in active):
            missing = [pid for pid in active if pid not in actions]
            if missing:
                fail(
                    f"{tr.path}.actions",
                    f"expected an action for every person active in s_{tr.t - 1}; {missing[0]!r} has none.",
                )
            active_set = set(active)  # built once: rebuilt per action it made this quadratic
            extra = sorted(pid for pid in actions if pid not in active_set)
            fail(
                f"{tr.path}.actions.{extra[0]}",
                f"expected actions only for people active in s_{tr.t - 1}; {extra[0]!r} is not active.",
            )
        movements = tr.step["movements"]
        for j, pid in enumerate(active):
            if j >= len(movements):
                fail(
                    f"{tr.path}.movements",
                    f"expected one movement per person active in s_{tr.t - 1} ({len(active)}), got "
                    f"{len(movements)}; {pid!r} has none.",
                )
            if movements[j]["person_id"] != pid:
                fail(
                    f"{tr.path}.movements[{j}].person_id",
                    f"expected {pid!r} (the movements of the active people, sorted by ID), got "
                    f"{movements[j]['person_id']!r}.",
                )
        if len(movements) != len(active):
            fail(
                f"{tr.path}.movements[{len(active)}]",
                f"expected {len(active)} movements (one per active person), got {len(movements)}; "
                f"{movements[len(active)]['person_id']!r} is not active.",
            )


class MovementConsistency(Accumulator):
    """Each movement agrees with its action, origin and outcome."""

    def __init__(self, scenario):
        self.grid = scenario.grid
        self.block_fire = scenario.enter_fire == "block"

    def update(self, tr):
        grid, cols, open_ = self.grid, self.grid.cols, self.grid.open
        actions = tr.step["actions"]
        position = tr.prev.position
        block_fire = self.block_fire
        for j, (i, move) in enumerate(zip(tr.movers, tr.step["movements"])):
            action, outcome, origin, target = (
                actions[move["person_id"]],
                move["outcome"],
                move["origin"],
                move["target"],
            )
            row, col = divmod(position[i], cols)
            if origin[0] != row or origin[1] != col:
                _movement_defect(
                    tr,
                    j,
                    "origin",
                    f"expected {move['person_id']!r}'s position in s_{tr.t - 1}, {[row, col]}, got {origin}.",
                )
            if action == "stay":
                if outcome != "stayed":
                    _movement_defect(tr, j, "outcome", f"action 'stay' must have outcome 'stayed', got {outcome!r}.")
                if target is not None:
                    _movement_defect(tr, j, "target", f"action 'stay' must have a null target, got {target}.")
                continue
            if outcome == "stayed":
                _movement_defect(
                    tr, j, "outcome", f"outcome 'stayed' requires action 'stay', but the action is {action!r}."
                )
            dr, dc = DELTAS[action]
            row, col = row + dr, col + dc
            if target is None or target[0] != row or target[1] != col:
                _movement_defect(tr, j, "target", f"expected origin + {action} = {[row, col]}, got {target}.")
            if outcome == "moved":
                if not grid.in_bounds(row, col):
                    _movement_defect(tr, j, "outcome", f"'moved' to {target}, which is out of bounds.")
                x = row * cols + col
                if not open_[x]:
                    _movement_defect(tr, j, "outcome", f"'moved' to {target}, which is a wall.")
                if block_fire and tr.burning[x]:
                    _movement_defect(
                        tr,
                        j,
                        "outcome",
                        f"'moved' to {target}, which is burning in s_{tr.t - 1}, under enter_fire 'block'.",
                    )


def _movement_defect(tr, j, field, message):
    fail(f"{tr.path}.movements[{j}].{field}", message)


class EndPositions(Accumulator):
    """Each person active in s_{t-1} ends where its movement says, alone."""

    def __init__(self, scenario):
        self.scenario = scenario

    def update(self, tr):
        cols = self.scenario.grid.cols
        ends = {}
        cur = tr.cur.position
        for j, (i, move) in enumerate(zip(tr.movers, tr.step["movements"])):
            if move["outcome"] == "moved":
                end = move["target"][0] * cols + move["target"][1]
            else:
                end = tr.prev.position[i]
            if cur[i] != end:
                fail(
                    f"{tr.path}.snapshot.people[{i}].position",
                    f"expected {move['person_id']!r} at the end of its movement, {_cell(end, cols)}, got "
                    f"{_cell(cur[i], cols)}.",
                )
            if end in ends:
                other = self.scenario.person_ids[ends[end]]
                fail(
                    f"{tr.path}.movements[{j}]",
                    f"{move['person_id']!r} and {other!r} both end the movement phase on {_cell(end, cols)}.",
                )
            ends[end] = i


class FireConsistency(Accumulator):
    """Ignitions are new non-wall cells and burning(s_t) = burning(s_{t-1}) ∪ ignited."""

    def __init__(self, scenario):
        self.grid = scenario.grid

    def update(self, tr):
        cols = self.grid.cols
        for j, x in enumerate(tr.ignited):
            if not self.grid.open[x]:
                fail(f"{tr.path}.ignitions[{j}]", f"ignition {_cell(x, cols)} is a wall; walls never burn.")
            if tr.burning[x]:
                fail(f"{tr.path}.ignitions[{j}]", f"ignition {_cell(x, cols)} was already burning in s_{tr.t - 1}.")
        ignitions = tr.step["ignitions"]
        expected = sorted(tr.prev.burning + ignitions) if ignitions else tr.prev.burning
        if tr.cur.burning != expected:
            fail(
                f"{tr.path}.snapshot.burning",
                f"expected burning(s_{tr.t - 1}) ∪ ignitions ({len(expected)} cells), got {len(tr.cur.burning)} "
                f"cells; first difference: {_first_difference(expected, tr.cur.burning)}.",
            )


def _first_difference(expected, actual):
    for j, (a, b) in enumerate(zip(expected, actual)):
        if a != b:
            return f"at [{j}] expected {a}, got {b}"
    j = min(len(expected), len(actual))
    want = expected[j] if j < len(expected) else "the end"
    got = actual[j] if j < len(actual) else "the end"
    return f"at [{j}] expected {want}, got {got}"


class StatusEvents(Accumulator):
    """Every status change has exactly one event with the exit or cause the record implies.

    The status each person must have is derived from its movement and the
    fire, so this check also enforces "no active person on a burning cell or
    an exit": anyone standing there is derived as resolved.
    """

    def __init__(self, scenario):
        self.scenario = scenario

    def update(self, tr):
        sc = self.scenario
        ids, ignited = sc.person_ids, tr.ignited_set
        evacuations, casualties = [], []
        status, position = tr.cur.status, tr.cur.position
        for i, move in zip(tr.movers, tr.step["movements"]):
            cell = position[i]  # EndPositions has checked it against the movement
            if move["outcome"] == "moved" and tr.burning[cell]:
                want, event = "casualty", (ids[i], "entered_fire")
            elif move["outcome"] == "moved" and cell in sc.exit_at:
                want, event = "evacuated", (ids[i], sc.exit_at[cell])
            elif cell in ignited:
                want, event = "casualty", (ids[i], "fire_spread")
            else:
                want, event = "active", None
            if status[i] != want:
                why = {
                    "casualty": "it moved onto a burning cell"
                    if event and event[1] == "entered_fire"
                    else "its cell ignited",
                    "evacuated": f"it stands on exit {event[1]!r}" if event else "",
                    "active": "nothing resolved it",
                }[want]
                fail(
                    f"{tr.path}.snapshot.people[{i}].status",
                    f"expected {ids[i]!r} to be {want!r} at step {tr.t} because {why}, got {status[i]!r}.",
                )
            if event is not None:
                (evacuations if want == "evacuated" else casualties).append(event)
        self._match("evacuations", "exit_id", evacuations, tr)
        self._match("casualties", "cause", casualties, tr)
        prev = tr.prev
        for i, was in enumerate(prev.status):
            if was != "active" and (status[i] != was or position[i] != prev.position[i]):
                fail(
                    f"{tr.path}.snapshot.people[{i}]",
                    f"{ids[i]!r} was resolved ({was}) in s_{tr.t - 1} and must never change, but its status or "
                    "position did.",
                )

    @staticmethod
    def _match(key, field, expected, tr):
        recorded = tr.step[key]
        for j, event in enumerate(recorded):
            if j >= len(expected) or (event["person_id"], event[field]) != expected[j]:
                want = expected[j] if j < len(expected) else None
                if want is None or event["person_id"] != want[0]:
                    fail(
                        f"{tr.path}.{key}[{j}]",
                        f"{event['person_id']!r} has no matching status change at step {tr.t}"
                        + (f"; expected the {key[:-1]} of {want[0]!r} here." if want else "."),
                    )
                fail(f"{tr.path}.{key}[{j}].{field}", f"expected {want[1]!r} for {want[0]!r}, got {event[field]!r}.")
        if len(expected) > len(recorded):
            missing = expected[len(recorded)]
            fail(
                f"{tr.path}.{key}",
                f"{missing[0]!r} changed status at step {tr.t} but has no entry in {key} (expected {field} "
                f"{missing[1]!r}).",
            )


class TrappedSet(Accumulator):
    """The trapped set equals a recomputation (rule 6), with reachability kept incrementally.

    A replayed step is checked by nothing, so its ignitions are only kept
    (``pending``) and given to the reachability when a strict step comes:
    a record replayed to its end (the usual case) never pays for this
    check's second copy of the simulator's own reachability upkeep.
    """

    def __init__(self, scenario, initial):
        self.scenario = scenario
        cols = scenario.grid.cols
        burning = [r * cols + c for r, c in initial.burning]
        self.reachability = ExitReachability(scenario.grid, scenario.exit_cells, burning)
        self.pending = []  # ignitions of replayed steps, not yet given to the reachability
        self._check(initial, "$.initial_state", "")

    def _check(self, state, path, part):
        want = expected_trapped(self.scenario, state, self.reachability.reach)
        if state.trapped != want:
            fail(
                f"{path}{part}.trapped",
                f"expected the trapped set {want} (active people with no path to a usable exit), got {state.trapped}.",
            )

    def update(self, tr):
        if tr.replayed:
            self.pending += tr.ignited  # for the strict steps that may follow
            return
        if self.pending:
            self.reachability.ignite(self.pending)  # ignite takes cells in any order
            self.pending = []
        if tr.ignited:
            self.reachability.ignite(tr.ignited)
        self._check(tr.cur, tr.path, ".snapshot")


class Termination(Accumulator):
    """Terminated with the right reason exactly when the rules say so."""

    def __init__(self, scenario):
        self.horizon = scenario.max_steps

    def update(self, tr):
        cur = tr.cur
        if not cur.active:
            want = "all_resolved"
        elif tr.t >= self.horizon:
            want = "max_steps"
        else:
            want = None
        if cur.reason != want or cur.terminated != (want is not None):
            if want is None:
                fail(
                    f"{tr.path}.snapshot.terminated",
                    f"expected not terminated at step {tr.t} (people remain active and the horizon is "
                    f"{self.horizon}), got terminated={str(cur.terminated).lower()}, reason {cur.reason!r}.",
                )
            fail(
                f"{tr.path}.snapshot.termination_reason",
                f"expected terminated with reason {want!r} at step {tr.t}, got "
                f"terminated={str(cur.terminated).lower()}, reason {cur.reason!r}.",
            )


def step_checks(scenario, initial):
    """The stage-2 accumulators in the order they run on each transition."""
    return (
        StepNumbering(),
        Coverage(scenario),
        MovementConsistency(scenario),
        EndPositions(scenario),
        FireConsistency(scenario),
        StatusEvents(scenario),
        TrappedSet(scenario, initial),
        Termination(scenario),
    )


# The checks whose state depends on earlier steps; a replayed transition
# must still reach them (and they check nothing on it).
STATEFUL_CHECKS = (TrappedSet,)


def replayed_step_checks(checks):
    """Those of ``checks`` (from ``step_checks``) that a replayed transition must reach."""
    return tuple(check for check in checks if isinstance(check, STATEFUL_CHECKS))


def check_final_matches_last(final, last, scenario):
    """final_state equals the matching fields of s_T."""
    for key in ("step", "people", "trapped", "termination_reason"):
        if final[key] != last.raw[key]:
            fail(f"$.final_state.{key}", f"expected the value of s_{last.step}'s {key!r}, got a different value.")
