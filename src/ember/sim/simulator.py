"""The EMBER simulator (simulator.md §3–4).

People are indexed by rank in ID order, cells by ``row * cols + col``; the
dicts of the record are built from that state once per step.  Per-step cost
is O(active people + frontier + snapshot size): the fire frontier and the
exit reachability are kept incrementally, never rescanned from the grid.

A step makes thousands of small containers on a large scenario (13,000
burning cells are 13,000 fresh ``[row, col]`` lists a snapshot), all alive
until the step returns, so the cyclic garbage collector, set off by
allocation counts, would scan them over and over for nothing: none of them
is ever part of a cycle.  ``step`` and ``observe`` therefore run with the
collector paused (and restore it as they found it); the caller usually
drops the previous record before the next collection, which then finds
little to scan.
"""

import contextlib
import gc
from bisect import bisect_left, insort

from ..errors import ActionError, SeedError  # SeedError: raised here, declared with every error
from ..frozen import BurningCells, SharedCells, frozen_list
from ..grid.cells import DELTAS
from ..grid.reachability import ExitReachability
from ..scenario import compile_scenario
from ..versions import OBSERVATION_VERSION, SCHEMA_VERSION, SIMULATOR_VERSION
from .fire import FireSpread

ACTIONS = ("stay", "north", "south", "west", "east")
ACTION_SET = frozenset(ACTIONS)
ACTIVE, EVACUATED, CASUALTY = "active", "evacuated", "casualty"
MAX_SEED = 2**64 - 1


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector for a block, restoring it as found.

    For a loop of trusted code only (the simulator, built-in policies, the
    metric accumulators), which makes no cycles: each step's new containers
    would otherwise be scanned by young-generation collections again and
    again (on a large floor, a new list of every burning cell each step).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def marked_cells(mask):
    """The cells where the bytearray ``mask`` holds 1, in cell order (found at C speed)."""
    cells = []
    cell = mask.find(1)
    while cell >= 0:
        cells.append(cell)
        cell = mask.find(1, cell + 1)
    return cells


def check_seed(seed):
    if type(seed) is not int or not 0 <= seed <= MAX_SEED:
        raise SeedError(f"seed must be an integer with 0 <= seed < 2^64, got {seed!r}.")
    return seed


def resolve_moves(outcomes, targets, occupant):
    """Settle the candidates of simulator.md §3 rule 1, in place.

    Slots are positions in the active list.  ``outcomes[k]`` is None for a
    candidate left after conflicts, else already decided; ``targets[k]`` is
    a candidate's target cell; ``occupant`` maps a cell to the slot of the
    active person standing there in s_{t-1}.  Following the links slot ->
    occupant of its target gives chains and cycles: a chain ending at a free
    cell moves, one ending at a person who does not move is
    ``blocked_occupied``, and everyone on a cycle is ``blocked_cycle``.
    """
    for start, decided in enumerate(outcomes):
        if decided is not None:
            continue
        path = []
        k = start
        while True:
            decided = outcomes[k]
            if decided == _ON_PATH:
                # Everyone from the first visit of k on is a cycle (a swap is one of two).
                first = path.index(k)
                for member in path[first:]:
                    outcomes[member] = "blocked_cycle"
                del path[first:]
                end = "blocked_occupied"
                break
            if decided is not None:
                end = "moved" if decided == "moved" else "blocked_occupied"
                break
            outcomes[k] = _ON_PATH
            path.append(k)
            nxt = occupant.get(targets[k])
            if nxt is None:
                end = "moved"  # the chain ends at a free cell
                break
            k = nxt
        for member in path:
            outcomes[member] = end


_ON_PATH = "on path"  # marks slots on the chain being followed


class SortedCells:
    """The burning set in cell order, handing out ``[[row, col], ...]`` lists.

    ``items`` holds a ``[row, col]`` list for each cell, made once and never
    changed.  A step's ignitions are merged in at once into a new list
    (``items`` itself is never modified, so a list handed out by ``shared``
    stays as it was): their places are found by binary search (lists
    compare as their cells order) and the new list is built from slices of
    the old, one copy where inserting the k cells one by one costs k
    memmoves.  ``grown`` is (the list before
    the last ``add``, the cells it added), so that a reader holding the
    one can take the other's new cells without comparing the lists
    (``policies._BurningTracker``).

    ``frozen=True`` (a public simulator's): the lists are ``FrozenList``s
    and the outer one a ``BurningCells`` of this source, which refuse
    changes (``ember.frozen``), so they are handed out as they are, step
    after step, to policies and callers that may try to edit them.  With
    ``frozen=False`` they are plain lists (the outer one a ``SharedCells``,
    a list that knows its source), for callers that never modify what they
    get.
    """

    def __init__(self, cells, cols, rows=0, frozen=False):
        self.cols = cols
        self.frozen = frozen
        # One int object per row and column number: rows and columns above 256 (not cached by
        # CPython) would otherwise cost two int objects per burning cell.
        self.numbers = list(range(max(rows, cols)))
        self.items = self._outer()
        list.extend(self.items, map(self._cell, sorted(cells)))
        self.grown = None

    def _outer(self):
        outer = frozen_list((), BurningCells) if self.frozen else SharedCells()
        outer.source = self
        return outer

    def _cell(self, cell):
        numbers, cols = self.numbers, self.cols
        pair = (numbers[cell // cols], numbers[cell % cols])
        return frozen_list(pair) if self.frozen else [*pair]

    def add(self, cells):
        """Add new cells (sorted, not yet present)."""
        old, make = self.items, self._cell
        merged = self._outer()
        extend, append = list.extend, list.append  # the base class's: a frozen list refuses its own
        at = 0
        for cell in cells:
            item = make(cell)
            k = bisect_left(old, item, at)
            extend(merged, old[at:k])
            append(merged, item)
            at = k
        extend(merged, old[at:])
        self.items = merged
        self.grown = (old, cells)

    def shared(self):
        """The kept list of the kept ``[row, col]`` lists, in order: never to be modified."""
        return self.items


class BurningText:
    """The canonical JSON bytes of the burning list (simulator.md §1), kept row by row.

    For the replay check, which compares a record's line with the
    simulator's step: the burning list is most of a step's bytes on a large
    floor, and only the rows with new fire change.  Each row keeps its
    burning columns in order and the text ``[r,c1],[r,c2],...`` of its
    cells; a new cell's text goes in before that of the next column (found
    by one ``bytes.find``: a text starts with ``[`` and ends with ``]``, so
    it matches only itself), and the whole text is the join of the rows'
    texts, made when asked for (``json``).  ``size`` is that text's length,
    kept as cells come, and ``occurs_at`` compares bytes with it row by row,
    without the join: the list is most of a step line's bytes, so one join
    a step is two copies of most of the record.
    """

    def __init__(self, cells, cols):
        self.cols = cols
        self.rows = []  # rows with fire, in order
        self.columns = {}  # row -> its burning columns, in order
        self.row_text = {}  # row -> the text of its cells
        self.text = None  # the whole list's text, until the next add
        self.cell_bytes = 0  # the cells' texts, each with one comma or bracket: len(json()) - 1 with fire
        self.add(sorted(cells))

    def add(self, cells):
        cols, columns, row_text = self.cols, self.columns, self.row_text
        for cell in cells:
            row, col = divmod(cell, cols)
            piece = b"[%d,%d]" % (row, col)
            burning = columns.get(row)
            self.cell_bytes += len(piece) + 1
            if burning is None:
                insort(self.rows, row)
                columns[row] = [col]
                row_text[row] = piece
                continue
            k = bisect_left(burning, col)
            burning.insert(k, col)
            text = row_text[row]
            if k + 1 == len(burning):
                row_text[row] = text + b"," + piece
            else:
                at = text.find(b"[%d,%d]" % (row, burning[k + 1]))
                row_text[row] = text[:at] + piece + b"," + text[at:]
        if cells:
            self.text = None

    def json(self):
        if self.text is None:
            self.text = b"[" + b",".join(map(self.row_text.__getitem__, self.rows)) + b"]"
        return self.text

    @property
    def size(self):
        """``len(json())``."""
        return 1 + self.cell_bytes if self.rows else 2

    def occurs_at(self, data, at):
        """Whether ``data`` holds ``json()`` at offset ``at`` (compared in place, row by row, unless
        the joined text is at hand: no new fire since it was last made)."""
        if self.text is not None:
            return data.startswith(self.text, at)
        if not self.rows:
            return data.startswith(b"[]", at)
        if not data.startswith(b"[", at):
            return False
        position, row_text = at + 1, self.row_text
        for row in self.rows:
            if position > at + 1:
                if not data.startswith(b",", position):  # between rows
                    return False
                position += 1
            text = row_text[row]
            if not data.startswith(text, position):
                return False
            position += len(text)
        return data.startswith(b"]", position)


class Simulator:
    """One deterministic episode of a scenario under a seed."""

    def __init__(self, scenario, seed, shared_lists=False, burning_lists=True):
        """The burning list and its ``[row, col]`` lists are shared between steps (and between a
        snapshot and the next observation), never made afresh for each: tens of thousands of
        small lists a step on a large floor.  By default they are read-only (``ember.frozen``):
        a policy editing its observation, or a caller its step, gets a ``TypeError`` and
        changes nothing the simulator hands out later; everything else a step, snapshot or
        observation holds is made afresh for it.  ``shared_lists=True`` is for callers that
        never modify a step, snapshot or observation they are given (the replay check,
        ``measure_run`` with a built-in policy): the burning lists are plain, and the entries
        of people who did not change are shared between snapshots too.  The values, and so
        the records, are the same either way.

        ``burning_lists=False`` is for the replay check alone, which compares a step's burning
        list by its canonical text (``burning_json``): after the initial state, each snapshot
        holds None for ``"burning"`` and the sorted list is not kept, until ``burning_list()``
        is first asked for (a step that did not match); from then on it is kept and every
        snapshot holds it, as with ``True``.
        """
        self.scenario = compile_scenario(scenario)
        self.seed = check_seed(seed)
        self.shared_lists = shared_lists
        sc = self.scenario
        self.grid = grid = sc.grid
        self.ids = sc.person_ids
        self.status = [ACTIVE] * len(self.ids)
        self.position = list(sc.start_cells)
        self.position_rc = [divmod(c, grid.cols) for c in self.position]  # the same as (row, col)
        self.burning = bytearray(grid.size)
        for cell in sc.ignitions:
            self.burning[cell] = 1
        self.burning_cells = SortedCells(sc.ignitions, grid.cols, grid.rows, frozen=not shared_lists)
        self.burning_text = None  # a BurningText once burning_json() is first asked for
        self.fire = FireSpread(grid, self.seed, sc.spread_numerator, sc.spread_denominator)
        self.fire.burn(sc.ignitions, self.burning)
        self.reachability = ExitReachability(grid, sc.exit_cells, sc.ignitions)
        self.active = list(range(len(self.ids)))
        self.active_ids = list(self.ids)  # the IDs of ``active``, in the same order
        self.t = 0
        self.termination_reason = None
        self.trapped = self._trapped()
        if shared_lists:
            # Per person, its entry of the snapshot's people list, replaced when it changes.
            self.snapshot_entries = [
                {"person_id": pid, "status": s, "position": list(rc)}
                for pid, s, rc in zip(self.ids, self.status, self.position_rc)
            ]
        self.header = {
            "schema_version": SCHEMA_VERSION,
            "simulator_version": SIMULATOR_VERSION,
            "observation_version": OBSERVATION_VERSION,
            "scenario_id": sc.scenario_id,
            "scenario_hash": sc.hash,
            "seed": self.seed,
        }
        self.initial_state = self._snapshot()
        self.final_state = None
        if not burning_lists:
            self.burning_cells = None  # made again from ``burning`` if burning_list() is asked for

    # -- public API ---------------------------------------------------------

    @property
    def terminated(self):
        return self.termination_reason is not None

    def burning_json(self):
        """The canonical JSON bytes of the current snapshot's burning list, kept up to date from then on."""
        return self.kept_burning_text().json()

    def kept_burning_text(self):
        """The ``BurningText`` of the current burning list, made on first use and kept up to date from then on."""
        if self.burning_text is None:
            self.burning_text = BurningText(marked_cells(self.burning), self.grid.cols)
        return self.burning_text

    def burning_list(self):
        """The current snapshot's burning list, as a snapshot holds it; kept up to date from then on
        (see ``burning_lists``)."""
        return self._sorted_cells().shared()

    def observe(self):
        """The observation of the current state, for the step about to be taken."""
        if not gc.isenabled():
            return self._observe()
        gc.disable()
        try:
            return self._observe()
        finally:
            gc.enable()

    def step(self, actions):
        """Run one step (simulator.md §3) and return its record dict."""
        if not gc.isenabled():
            return self._step(actions)
        gc.disable()
        try:
            return self._step(actions)
        finally:
            gc.enable()

    # -- internals ----------------------------------------------------------

    def _observe(self):
        if self.terminated:
            raise ActionError("the episode has terminated: there is nothing left to observe.")
        position_rc = self.position_rc
        return {
            "observation_version": OBSERVATION_VERSION,
            "step": self.t + 1,
            "people": [
                {"person_id": pid, "position": [*position_rc[i]]} for pid, i in zip(self.active_ids, self.active)
            ],
            "burning": self.burning_list(),
            "trapped": list(self.trapped),
        }

    def _step(self, actions):
        chosen = self._check_actions(actions)
        grid, cols, position = self.grid, self.grid.cols, self.position
        t = self.t + 1
        block_fire = self.scenario.enter_fire == "block"

        # 1. Movement, all against s_{t-1}.  Per slot k of the active list:
        # origin and target as [row, col] (for the record), and for
        # candidates the flat target cell.
        active, rows, open_, burning = self.active, grid.rows, grid.open, self.burning
        n = len(active)
        outcomes, origins, targets, cells = [None] * n, [None] * n, [None] * n, [None] * n
        claims = {}  # target cell -> the slot claiming it, or -1 once contested
        position_rc = self.position_rc
        for k, i, action in zip(range(n), active, chosen):
            row, col = position_rc[i]
            origins[k] = [row, col]
            if action == "stay":
                outcomes[k] = "stayed"
                continue
            dr, dc = DELTAS[action]
            r = row + dr
            c = col + dc
            targets[k] = [r, c]
            if not (0 <= r < rows and 0 <= c < cols):
                outcomes[k] = "blocked_boundary"
                continue
            x = position[i] + dr * cols + dc
            if not open_[x]:
                outcomes[k] = "blocked_wall"
            elif block_fire and burning[x]:
                outcomes[k] = "blocked_fire"
            else:
                cells[k] = x
                other = claims.get(x)
                if other is None:
                    claims[x] = k
                else:
                    outcomes[k] = "blocked_conflict"
                    if other >= 0:
                        outcomes[other] = "blocked_conflict"
                        claims[x] = -1
        resolve_moves(outcomes, cells, {position[i]: k for k, i in enumerate(active)})

        # 2. Entering fire (burning in s_{t-1}); 3. evacuation.  Both depend
        # on the mover's own end cell only, so they are settled as it moves;
        # slots are in ID order, so the events are too.
        evacuations, casualties = [], []
        exit_at, status = self.scenario.exit_at, self.status
        for k, result in enumerate(outcomes):
            if result == "moved":
                i = active[k]
                position[i] = cell = cells[k]
                position_rc[i] = tuple(targets[k])
                if burning[cell]:
                    status[i] = CASUALTY
                    casualties.append((i, "entered_fire"))
                elif cell in exit_at:
                    status[i] = EVACUATED
                    evacuations.append((i, exit_at[cell]))

        # 4. Fire spread; 5. spread casualties.
        ignited = self.fire.spread(t, self.burning)
        if ignited:
            if self.burning_cells is not None:
                self.burning_cells.add(ignited)
            if self.burning_text is not None:
                self.burning_text.add(ignited)
            self.reachability.ignite(ignited)
            for i in active:
                if burning[position[i]] and status[i] == ACTIVE:
                    status[i] = CASUALTY
                    casualties.append((i, "fire_spread"))
        casualties.sort()
        if self.shared_lists:
            entries, ids = self.snapshot_entries, self.ids
            for k, result in enumerate(outcomes):
                if result == "moved":
                    i = active[k]
                    entries[i] = {"person_id": ids[i], "status": status[i], "position": list(targets[k])}
            for i, _ in casualties:  # a fire_spread casualty did not move; an entered_fire one is done again
                entries[i] = {"person_id": ids[i], "status": status[i], "position": list(position_rc[i])}

        # 6. Trapped set; 7. termination.
        active_ids = self.active_ids
        movements = [
            {"person_id": pid, "origin": o, "target": x, "outcome": r}
            for pid, o, x, r in zip(active_ids, origins, targets, outcomes)
        ]
        step_actions = dict(zip(active_ids, chosen))
        if evacuations or casualties:
            self.active = [i for i in active if status[i] == ACTIVE]
            self.active_ids = [self.ids[i] for i in self.active]
        self.trapped = self._trapped()
        self.t = t
        if not self.active:
            self.termination_reason = "all_resolved"
        elif t == self.scenario.max_steps:
            self.termination_reason = "max_steps"
        record = {
            "step": t,
            "actions": step_actions,
            "movements": movements,
            "ignitions": [[c // cols, c % cols] for c in ignited],
            "evacuations": [{"person_id": self.ids[i], "exit_id": e} for i, e in evacuations],
            "casualties": [{"person_id": self.ids[i], "cause": cause} for i, cause in casualties],
            "snapshot": self._snapshot(),
        }
        if self.terminated:
            snap = record["snapshot"]
            # Fresh lists: a caller mutating the step must not change final_state.
            self.final_state = {
                "step": t,
                "people": [dict(p, position=list(p["position"])) for p in snap["people"]],
                "trapped": list(snap["trapped"]),
                "termination_reason": snap["termination_reason"],
            }
        return record

    def _check_actions(self, actions):
        """Validate a step's actions; return them in active-ID order. Mutates nothing."""
        if self.terminated:
            raise ActionError(f"the episode terminated at step {self.t} ({self.termination_reason}); no more steps.")
        if not isinstance(actions, dict):
            raise ActionError(
                f"step {self.t + 1}: the actions must be an object {{person_id: action}}, got {type(actions).__name__}."
            )
        # The usual case at C speed: every active person has a valid action
        # and nobody else has one.  Anything else takes the loop below,
        # which names the first defect.
        chosen = list(map(actions.get, self.active_ids))
        try:
            if len(actions) == len(chosen) and ACTION_SET.issuperset(chosen):
                return chosen
        except TypeError:  # an unhashable action: the loop below reports it
            pass
        chosen = []
        for i in self.active:
            pid = self.ids[i]
            if pid not in actions:
                raise ActionError(f"step {self.t + 1}: no action for active person {pid!r}.")
            action = actions[pid]
            if action not in ACTIONS:
                raise ActionError(
                    f"step {self.t + 1}: person {pid!r} has unknown action {action!r}; expected one of "
                    f"{', '.join(ACTIONS)}."
                )
            chosen.append(action)
        if len(actions) != len(self.active):
            active = {self.ids[i] for i in self.active}
            extra = sorted(str(k) for k in actions if k not in active)
            raise ActionError(f"step {self.t + 1}: action for {extra[0]!r}, who is not an active person.")
        return chosen

    def _sorted_cells(self):
        if self.burning_cells is None:
            self.burning_cells = SortedCells(
                marked_cells(self.burning), self.grid.cols, self.grid.rows, frozen=not self.shared_lists
            )
        return self.burning_cells

    def _trapped(self):
        reach, ids, position = self.reachability.reach, self.ids, self.position
        return [ids[i] for i in self.active if not reach[position[i]]]

    def _snapshot(self):
        # burning_lists=False, and nobody has asked for the list yet: None
        burning = None if self.burning_cells is None else self.burning_cells.shared()
        if self.shared_lists:
            people = self.snapshot_entries[:]
        else:
            # Made afresh: a step has as many new entries as movers, and a read-only entry costs
            # about three plain ones to make (the burning list is what a copy a step cost).
            people = [
                {"person_id": pid, "status": s, "position": [*rc]}
                for pid, s, rc in zip(self.ids, self.status, self.position_rc)
            ]
        return {
            "step": self.t,
            "people": people,
            "burning": burning,
            "trapped": list(self.trapped),
            "terminated": self.terminated,
            "termination_reason": self.termination_reason,
        }
