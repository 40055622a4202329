"""Built-in policies (simulator.md §4): ``stay``, ``random``, ``greedy`` and ``planner``.

A policy is a callable ``observation -> {person_id: action}``.  Built-ins
are made per episode by ``make_policy(name, scenario, seed)``.
"""

import random

from ..errors import did_you_mean
from ..frozen import BurningCells, SharedCells
from ..grid.cells import DIRECTIONS, FAR, UNREACHABLE, around
from ..grid.exit_distances import ExitDistances, LazyExitDistances
from ..scenario import compile_scenario

POLICY_NAMES = ("stay", "random", "greedy", "planner")
_RANDOM_ACTIONS = ("stay", "north", "south", "west", "east")


def stay_policy(observation):
    return {p["person_id"]: "stay" for p in observation["people"]}


class RandomPolicy:
    """Uniform actions from the policy's own RNG, seeded apart from the fire's."""

    def __init__(self, seed):
        self.rng = random.Random(f"ember/policy/random|{seed}")

    def __call__(self, observation):
        choice = self.rng.choice
        return {p["person_id"]: choice(_RANDOM_ACTIONS) for p in observation["people"]}


class GreedyPolicy:
    """Step toward the nearest usable exit through non-burning cells.

    The distance field depends only on the burning set, which only grows.
    It is kept by an ``ExitDistances`` field: when the observation's
    burning list is longer than the last one, the cells not seen burning
    before are deleted from the field, which updates only the cells whose
    distance changes.  Should a cell ever leave the burning list, the field
    is rebuilt from scratch.
    """

    def __init__(self, scenario, shared_observations=False):
        sc = compile_scenario(scenario)
        self.grid = sc.grid
        self.exit_cells = sc.exit_cells
        self.shared_observations = shared_observations  # see _BurningTracker
        self._tracker = None  # the cells seen burning so far
        self._field = None

    def _distances(self, burning):
        new = None if self._tracker is None else self._tracker.changed(burning)
        if new is None:
            # First observation, or cells left the burning list: start afresh.
            self._tracker = _BurningTracker(self.grid, self.shared_observations)
            cells = self._tracker.changed(burning) or []
            self._field = ExitDistances(self.grid, self.exit_cells, cells)
        elif new:
            self._field.burn(new)
        return self._field.dist

    def __call__(self, observation):
        dist = self._distances(observation["burning"])  # on the padded grid: no bounds to check
        width = self._field.width
        actions = {}
        for person in observation["people"]:
            r, c = person["position"]
            i = (r + 1) * width + c  # ExitDistances.padded
            own = dist[i]
            action = "stay"
            if own != UNREACHABLE:
                want = own - 1  # >= 0, never UNREACHABLE, which the border holds
                if dist[i - width] == want:
                    action = "north"
                elif dist[i + width] == want:
                    action = "south"
                elif dist[i - 1] == want:
                    action = "west"
                elif dist[i + 1] == want:
                    action = "east"
            actions[person["person_id"]] = action
        return actions


class _BurningTracker:
    """The cells not seen burning before, from each observation's burning list.

    ``changed`` returns the new cells, or None when cells left the list
    (never under simulator.md, but then the caller starts afresh).  Burning
    only grows, so the list's length says whether anything is new.  When it
    is longer, the new list is usually the previous one with k cells
    inserted (a step's ignitions): ``previous`` keeps the previous list (the
    tracker's own copy), the insertions are found by galloping, comparing an
    element of the new list with the previous list's element it would be if
    nothing had been inserted before it, in O(k log n) comparisons; then
    every stretch between insertions is compared with the previous list at
    C speed.  Any difference (an unsorted or rewritten list) falls back to
    the scan of every element, so the answer is always the scan's.

    ``previous`` holds copies of the cell lists, so that a caller changing
    an observation after the policy answered changes nothing here.  With
    ``shared=True`` (observations of a ``Simulator(shared_lists=True)``,
    whose lists are never modified and always grow by insertions) it is
    the observation's list itself, nothing is checked, and comparing a cell
    list with itself costs no look at its contents.  The same holds, without
    being told, for a public simulator's read-only burning lists
    (``frozen.BurningCells``): one that comes from the same source as the
    previous one is trusted as a shared list is.
    """

    def __init__(self, grid, shared=False):
        self.grid = grid
        self.shared = shared
        self.seen = bytearray(grid.size)
        self.previous = []  # [row, col] lists equal to the last list accepted

    def changed(self, burning):
        previous = self.previous
        if len(burning) == len(previous):
            return []
        if len(burning) < len(previous):
            return None  # some cell of the previous list must have left
        grown = _grown_from(burning, previous)
        if grown is not None:
            seen = self.seen
            for cell in grown:
                seen[cell] = 1
            self.previous = burning  # the simulator's own list, never modified
            return list(grown)
        shared = self.shared or _same_source(burning, previous)
        inserted = _insertions(burning, previous, check=not shared)
        if inserted is None:
            return self._scan(burning)
        cols, seen = self.grid.cols, self.seen
        new = []
        for k in inserted:
            r, c = burning[k]
            cell = r * cols + c
            if seen[cell]:
                return self._scan(burning)  # listed twice, or a cell left the list: the scan says None
            seen[cell] = 1
            new.append(cell)
        if shared or type(burning) is BurningCells:
            self.previous = burning  # the simulator's own list, never modified
            return new
        # The new previous list: the old stretches and copies of the inserted cells.
        merged, at = [], 0
        for shift, k in enumerate(inserted):
            merged += previous[at : k - shift]
            merged.append([burning[k][0], burning[k][1]])
            at = k - shift
        merged += previous[at:]
        self.previous = merged
        return new

    def _scan(self, burning):
        """Every element looked at: the new cells, or None if the list is not a superset of the seen cells."""
        cols, seen = self.grid.cols, self.seen
        new = []
        for r, c in burning:
            cell = r * cols + c
            if not seen[cell]:
                seen[cell] = 1
                new.append(cell)
        if len(self.previous) + len(new) != len(burning):
            return None
        if self.shared or type(burning) is BurningCells:
            self.previous = burning  # never modified: kept as it is
        else:
            self.previous = [[r, c] for r, c in burning]
        return new


def _same_source(burning, previous):
    """Whether both are burning lists of one simulator's (``frozen.BurningCells``, read-only, or
    ``frozen.SharedCells`` of a shared-lists simulator): the later then holds the earlier's cells, the
    same objects, with the new cells inserted."""
    kind = type(burning)
    same_kind = (kind is BurningCells or kind is SharedCells) and type(previous) is kind
    return same_kind and burning.source is previous.source


def _grown_from(burning, previous):
    """The cells (flat, sorted) that ``burning`` adds to ``previous`` when the simulator says so, else None.

    A simulator's ``SortedCells`` keeps what its last merge added to
    which list (``grown``): when ``burning`` is its current list and
    ``previous`` the one that merge started from, those are the new cells,
    known without a comparison (a galloping search compares lists of
    ``[row, col]`` lists, about a tenth of greedy's time on the large hall).
    """
    if not _same_source(burning, previous):
        return None
    source = burning.source
    grown = getattr(source, "grown", None)  # the isolation host's lists come from another source
    if grown is None or grown[0] is not previous or getattr(source, "items", None) is not burning:
        return None
    return grown[1]


def _insertions(longer, shorter, check=True):
    """Indexes in ``longer`` of its elements that are not in ``shorter``, if ``longer`` is ``shorter``
    with elements inserted; None if it is not.

    Assuming it is (both sorted, ``longer`` a superset), ``longer[i] ==
    shorter[i - s]``, with s the insertions found before i, holds exactly
    when no other insertion comes before i: so each insertion is found by
    galloping and binary search.  With ``check``, the assumption is then
    checked: every stretch between insertions must equal its stretch of
    ``shorter`` (without, it must be known to hold: successive lists of a
    ``Simulator(shared_lists=True)``).
    """
    n, m = len(longer), len(shorter)
    inserted = []
    i = 0  # the first index of ``longer`` not yet accounted for
    while len(inserted) < n - m:
        s = len(inserted)
        end = m + s  # from here on, ``shorter`` is used up: every element is an insertion
        if i >= end or longer[i] != shorter[i - s]:
            inserted.append(i)
            i += 1
            continue
        # longer[i] matches: gallop to a mismatch (or the end), then binary search.
        low, step = i, 1  # low: an index known to match
        high = low + step
        while high < end and longer[high] == shorter[high - s]:
            low = high
            step *= 2
            high = low + step
        if high > end:
            high = end
        while high - low > 1:  # longer[low] matches; longer[high] does not (or high == end)
            mid = (low + high) // 2
            if longer[mid] == shorter[mid - s]:
                low = mid
            else:
                high = mid
        inserted.append(high)
        i = high + 1
    if not check:
        return inserted
    # The check: each stretch between insertions equals its stretch of ``shorter``.
    at = 0
    for shift, k in enumerate(inserted):
        if longer[at + shift : k] != shorter[at : k - shift]:
            return None
        at = k - shift
    if longer[at + len(inserted) :] != shorter[at:]:
        return None
    return inserted


def _doors(grid, exit_cells):
    """Exit cells grouped into doors (4-adjacent exit cells), each door's cells sorted; doors by first cell."""
    left = set(exit_cells)
    doors = []
    for start in sorted(exit_cells):
        if start not in left:
            continue
        left.discard(start)
        door, stack = [start], [start]
        while stack:
            i = stack.pop()
            for _, j in grid.neighbours(i):
                if j in left:
                    left.discard(j)
                    door.append(j)
                    stack.append(j)
        doors.append(sorted(door))
    return doors


class PlannerPolicy:
    """Plans for the crowd: exits shared by capacity, moves that never block each other.

    Every step:

    1. **Fields.** A door is a group of 4-adjacent exit cells.  One distance
       field per door (``ExitDistances``, kept up to date as cells ignite):
       the 4-neighbour distance through non-burning cells, people ignored.
    2. **Exit assignment.** A door of w exit cells lets at most w people out
       per step, so a person's estimated time through door e is
       max(distance to e, people already sent to e // w).  People are taken nearest-first and each is
       sent where that estimate is lowest (keeping the exit it had unless
       another is better by more than one step, so plans do not flicker).
       Re-done every ``REPLAN_EVERY`` steps and at once when a door becomes
       unreachable; in between, a person whose door's route closed takes its
       nearest reachable door.  So exits that burn and routes that close are
       dropped as the fire spreads.
    3. **Moves.** Nearest-to-their-exit first, each person takes a neighbour
       one step closer to its exit that nobody has claimed this step, and
       that is free or held by someone already moving out of it; cells next
       to the fire are taken only when nothing else goes downhill.  So no two
       people target one cell (no ``blocked_conflict``), every move goes
       into a free cell or a moving chain (no ``blocked_occupied``), and a
       cycle would need each member to have decided after the one it
       follows (impossible): no ``blocked_cycle`` (simulator.md §3 rule 1).
       A person with no such move waits; people with no usable exit stay.

    Deterministic: every order is by distance, then person ID, then
    direction (north, south, west, east).
    """

    STICKINESS = 1  # steps another door must gain before a person is re-sent
    REPLAN_EVERY = 3  # steps between full exit assignments (a closed door forces one at once)

    def __init__(self, scenario, shared_observations=False):
        sc = compile_scenario(scenario)
        self.grid = sc.grid
        self.shared_observations = shared_observations  # see _BurningTracker
        self.doors = _doors(sc.grid, sc.exit_cells)
        self.fields = None
        self.tracker = None
        self.hot = None  # 1 on burning cells and their neighbours
        self.assigned = {}  # person_id -> door index
        self._usable = None  # per door: reachable at the last assignment
        # Cells are indexed on the fields' padded grid (ExitDistances.padded) throughout.
        grid, cols, size = self.grid, self.grid.cols, self.grid.size
        self.width = width = cols + 1
        self.padded_doors = [[cell + cell // cols + width for cell in door] for door in self.doors]
        # Per padded cell, its open in-bounds neighbours as (action, padded cell), in the order north,
        # south, west, east (empty for walls and the border).
        open_ = grid.open
        self.moves = [()] * ((grid.rows + 2) * width)
        for i in range(size):
            if open_[i]:
                neighbours = zip(DIRECTIONS, around(i, cols, size))
                self.moves[i + i // cols + width] = tuple(
                    (a, j + j // cols + width) for a, j in neighbours if j >= 0 and open_[j]
                )

    def _update(self, burning):
        new = None if self.tracker is None else self.tracker.changed(burning)
        grid = self.grid
        if new is None:
            self.tracker = tracker = _BurningTracker(grid, self.shared_observations)
            cells = tracker.changed(burning) or []
            self.fields = [LazyExitDistances(grid, door, cells) for door in self.doors]
            self.hot = bytearray(len(self.moves))
            new = cells
        elif new:
            for field in self.fields:
                field.burn(new)
        hot, cols, width = self.hot, grid.cols, self.width
        for cell in new:
            x = cell + cell // cols + width
            hot[x] = hot[x - width] = hot[x + width] = hot[x - 1] = hot[x + 1] = 1  # the border may be hot

    def _assign(self, people, step):
        """Person -> door index, by estimated time through each door (nearest people first).

        Re-done every ``REPLAN_EVERY`` steps and whenever a door stops or starts
        being reachable from anywhere; in between, a person whose door became
        unreachable is sent to its nearest reachable door.

        The fields are ``LazyExitDistances``: a door's distance from a cell
        is only made exact where it can change the answer, and otherwise
        known to be too large by its lower bound (distances only grow).
        """
        fields = self.fields
        dists = [field.dist for field in fields]
        # Exit cells never wait for a repair (LazyExitDistances): each holds 0 or UNREACHABLE.
        usable = tuple(any(d[c] == 0 for c in door) for d, door in zip(dists, self.padded_doors))
        if step % self.REPLAN_EVERY != 1 and usable == self._usable and self.assigned:
            assigned = self.assigned
            # Each field is read where the people sent to its door stand.
            standing = [[] for _ in fields]
            for pid, cell in people:
                e = assigned.get(pid)
                if e is not None:
                    standing[e].append(cell)
            for field, cells in zip(fields, standing):
                if cells:
                    field.settle(cells)
            for pid, cell in people:
                e = assigned.get(pid)
                if e is None or dists[e][cell] == UNREACHABLE:
                    nearest = nearest_door(fields, cell)
                    if nearest is None:
                        assigned.pop(pid, None)
                    else:
                        assigned[pid] = nearest[0]
            return assigned
        self._usable = usable
        widths = [len(door) for door in self.doors]
        loads = [0] * len(dists)
        ranked = []
        for pid, cell in people:
            nearest = nearest_door(fields, cell)
            if nearest is not None:
                ranked.append((nearest[1], pid, cell, nearest[0]))
        ranked.sort()  # person IDs are distinct: the tuples' tails are never compared
        previous = self.assigned
        stickiness = self.STICKINESS
        assigned = {}
        for nearest, pid, cell, first in ranked:
            # The lowest (cost, distance, door) over the reachable doors, cost = max(distance, wait).
            wait = loads[first] // widths[first]
            best, best_cost, best_d = first, nearest if nearest > wait else wait, nearest
            for e, field in enumerate(fields):
                if e == first:
                    continue
                wait = loads[e] // widths[e]
                if wait > best_cost:
                    continue  # its cost is at least its wait
                # Door e can only win at a distance of best_cost or less: exact once the field is settled there.
                if field.level < best_cost:
                    field.settle_to(best_cost)
                d = dists[e][cell]
                if d < 0 or d > best_cost:
                    continue  # unreachable, or farther than best_cost (INVALID: farther than the level)
                cost = d if d > wait else wait
                if cost < best_cost or (cost == best_cost and (d < best_d or (d == best_d and e < best))):
                    best, best_cost, best_d = e, cost, d
            old = previous.get(pid)
            if old is not None and old != best:
                limit = best_cost + stickiness
                if loads[old] // widths[old] <= limit:
                    field = fields[old]
                    if field.level < limit:
                        field.settle_to(limit)
                    d = dists[old][cell]
                    if 0 <= d <= limit:  # exact, and its cost is at most best_cost + stickiness
                        best = old
            loads[best] += 1
            assigned[pid] = best
        self.assigned = assigned
        return assigned

    def __call__(self, observation):
        self._update(observation["burning"])
        width = self.width
        people = [(p["person_id"], (p["position"][0] + 1) * width + p["position"][1]) for p in observation["people"]]
        assigned = self._assign(people, observation["step"])
        dists = [field.dist for field in self.fields]
        hot, moves = self.hot, self.moves
        occupied = {cell for _, cell in people}
        order = []
        actions = {}
        for pid, cell in people:
            e = assigned.get(pid)
            if e is None:
                actions[pid] = "stay"
            else:
                order.append((dists[e][cell], pid, cell, e))
        order.sort()
        claimed = set()
        vacating = set()  # cells whose person moves out this step
        for own, pid, i, e in order:
            dist = dists[e]
            want = own - 1
            choice = fallback = None
            for action, j in moves[i]:
                if dist[j] != want or j in claimed or (j in occupied and j not in vacating):
                    continue
                if hot[j] and not hot[i]:
                    if fallback is None:
                        fallback = (action, j)
                    continue
                choice = (action, j)
                break
            if choice is None:
                choice = fallback
            if choice is None:
                actions[pid] = "stay"
            else:
                actions[pid] = choice[0]
                claimed.add(choice[1])
                vacating.add(i)
        return actions


def nearest_door(fields, cell):
    """(index, distance) of the nearest door from ``cell`` by ``fields`` (``LazyExitDistances``), the first
    of equals; None if no door is reachable.

    Lower bounds first: a field is settled only as far as the smallest
    bound, which rises until some field shows that distance exactly.
    """
    while True:
        low, bounds = FAR, []
        for field in fields:
            d = field.dist[cell]
            if d < 0:  # LazyExitDistances.lower_bound, written out: this runs per person and door
                d = FAR if d == UNREACHABLE else field.level + 1
            bounds.append(d)
            if d < low:
                low = d
        if low == FAR:
            return None
        for k, field in enumerate(fields):
            if bounds[k] == low:
                if field.level < low:
                    field.settle_to(low)
                if field.dist[cell] == low:
                    return k, low  # the first field at the smallest distance: every earlier one is farther


def is_builtin(policy):
    """True for a built-in policy: its name, or an object ``make_policy`` made.

    A built-in policy only reads its observations, so it may be given a
    ``Simulator(shared_lists=True)``'s (``measure_run`` does).
    """
    built_in_types = (RandomPolicy, GreedyPolicy, PlannerPolicy)
    return isinstance(policy, str) or policy is stay_policy or isinstance(policy, built_in_types)


def reads_only(policy):
    """True for a policy that only reads its observations, so that a ``Simulator(shared_lists=True)``'s
    may be given to it: a built-in policy, or EMBER's own driver of a policy process (it says so with
    ``reads_observations_only = True``: it encodes each observation and keeps nothing of it)."""
    return is_builtin(policy) or getattr(policy, "reads_observations_only", False) is True


def make_policy(name, scenario, seed, shared_observations=False):
    """The built-in policy ``name`` for one episode.

    ``shared_observations=True`` when the observations come from a
    ``Simulator(shared_lists=True)``: their cell lists are then the
    simulator's own, never modified, and the greedy and planner policies
    keep references to them instead of copies (see ``_BurningTracker``).
    """
    if name == "stay":
        return stay_policy
    if name == "random":
        return RandomPolicy(seed)
    if name == "greedy":
        return GreedyPolicy(scenario, shared_observations)
    if name == "planner":
        return PlannerPolicy(scenario, shared_observations)
    hint = did_you_mean(name, POLICY_NAMES) or "."
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICY_NAMES)}{hint}")
