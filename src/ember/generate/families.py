"""Scenario families: seeded layouts, people and fire (docs/generate.md).

Every family builds a layout (walls and exits) from its parameters and a
``Draws`` stream, then ``_finish`` draws the ignitions and the people until
the scenario meets the generator's guarantees:

* it is valid (simulator.md §2; ``validate_scenario`` is run on it);
* every person can reach a usable exit at t = 0 (nobody starts trapped);
* **the fire matters**: burning every cell within ``FIRE_REACH`` steps of
  the ignitions (through open cells) lengthens or cuts the shortest exit
  route of at least one person standing outside that zone.  So the fire can
  cut at least one route that somebody needs, not only burn an empty corner.

Only integer arithmetic and SHA-256 draws are used, and every set is sorted
before it is drawn from: the output is byte-identical on every machine and
Python version.
"""

import dataclasses

from ..canonical import canonical_json
from ..errors import GenerationError
from ..grid.cells import UNREACHABLE
from ..grid.floor import Grid
from ..scenario import ENTER_FIRE_MODES, PROBABILITY_PATTERN, validate_scenario
from ..versions import SCHEMA_VERSION
from .draws import Draws

FIRE_REACH = 5  # steps: the zone whose burning must cut someone's route
FIRE_CLEARANCE = 2  # nobody starts within this many steps of an ignition
MAX_ATTEMPTS = 64  # draws of ignitions and people before giving up
MAX_SEED = 2**64 - 1


@dataclasses.dataclass(frozen=True, eq=False)
class Parameter:
    """One family parameter: an integer in [low, high], or a string (``kind`` str)."""

    name: str
    default: object
    help: str
    low: int = None
    high: int = None
    kind: type = int

    def check(self, value, family):
        where = f"{family} --{self.name.replace('_', '-')}"
        if self.kind is int:
            if type(value) is not int:
                raise GenerationError(f"{where}: expected an integer, got {value!r}.")
            if not self.low <= value <= self.high:
                raise GenerationError(f"{where}: expected an integer from {self.low} to {self.high}, got {value}.")
        elif self.name == "spread":
            match = PROBABILITY_PATTERN.fullmatch(value) if isinstance(value, str) else None
            if not match or len(value) > 21 or not int(match.group(1)) <= int(match.group(2)) <= 2**32:
                raise GenerationError(f'{where}: expected "N/D" with 0 <= N <= D <= 2^32, got {value!r}.')
        elif self.name == "enter_fire" and value not in ENTER_FIRE_MODES:
            raise GenerationError(f"{where}: expected 'casualty' or 'block', got {value!r}.")
        return value


def _common(rows, cols, people, spread, max_steps=0):
    return (
        Parameter("rows", rows, "grid rows", 12, 1000),
        Parameter("cols", cols, "grid columns", 12, 1000),
        Parameter("people", people, "number of people", 1, 50_000),
        Parameter("ignitions", 1, "number of initial ignitions", 1, 8),
        Parameter("spread", spread, 'fire spread probability "N/D"', kind=str),
        Parameter("enter_fire", "casualty", "what moving into fire does: casualty or block", kind=str),
        Parameter("max_steps", max_steps, "horizon; 0 = 2 x (rows + cols) + 2 x people / exits", 0, 100_000),
    )


# What each family adds to _common's parameters: family, then Parameter's name, default, help, low, high.
_SPECIFIC = (
    ("office", "room", 5, "room depth (and typical width)", 2, 20),
    ("office", "corridor", 2, "corridor width", 1, 5),
    ("office", "exits", 2, "number of exits at corridor ends", 1, 64),
    ("hall", "exits", 4, "number of doors", 1, 64),
    ("hall", "door", 1, "exit cells per door", 1, 5),
    ("hall", "pillars", 20, "number of pillars", 0, 50_000),
    ("hall", "pillar_size", 2, "pillar side in cells", 1, 6),
    ("bottleneck", "width", 1, "corridor width", 1, 8),
    ("bottleneck", "length", 6, "corridor length", 1, 990),
    ("bottleneck", "exits", 1, "exit cells at the corridor's end", 1, 8),
    ("bottleneck", "tables", 6, "short wall segments in the room", 0, 25_000),
    ("multi-exit", "exits", 4, "number of exits", 2, 64),
    ("multi-exit", "near_exits", 1, "exits with an ignition close by", 1, 8),
    ("multi-exit", "near", 3, "how close (steps) those ignitions are to their exit", 2, 10),
    ("multi-exit", "partitions", 4, "interior wall segments, each with a gap", 0, 2_500),
)


def _parameters(family, *common):
    """_common(*common), then the rows of ``family`` in _SPECIFIC."""
    return _common(*common) + tuple(Parameter(*row[1:]) for row in _SPECIFIC if row[0] == family)


_OFFICE = _parameters("office", 30, 40, 20, "1/8")
_HALL = _parameters("hall", 40, 40, 80, "1/8")
_BOTTLENECK = _parameters("bottleneck", 20, 30, 60, "1/10")
_MULTI_EXIT = _parameters("multi-exit", 40, 40, 60, "1/8")


class Layout:
    """Walls and exits on a grid, plus where each ignition may be drawn."""

    def __init__(self, rows, cols):
        self.rows = rows
        self.cols = cols
        self.walls = set()  # (row, col)
        self.exits = []  # (row, col), in the order they get IDs e1, e2, ...
        self.ignition_pools = None  # one sorted candidate list per ignition; None: anywhere open

    def border(self):
        rows, cols = self.rows, self.cols
        self.walls |= {(r, c) for r in range(rows) for c in (0, cols - 1)}
        self.walls |= {(r, c) for r in (0, rows - 1) for c in range(cols)}

    def open_exit(self, cell):
        self.walls.discard(cell)
        self.exits.append(cell)


def _border_cells(rows, cols):
    """Border cells that are not corners, clockwise from the top-left: exit candidates."""
    top = [(0, c) for c in range(1, cols - 1)]
    right = [(r, cols - 1) for r in range(1, rows - 1)]
    bottom = [(rows - 1, c) for c in range(cols - 2, 0, -1)]
    left = [(r, 0) for r in range(rows - 2, 0, -1)]
    return top + right + bottom + left


def _doors_on_border(layout, draws, count, width, spacing):
    """``count`` doors of ``width`` exit cells each on the border, at least ``spacing`` apart along it."""
    ring = _border_cells(layout.rows, layout.cols)
    n = len(ring)
    taken = []
    for _ in range(count * 16):
        if len(taken) == count:
            break
        start = draws.below(n)
        cells = [ring[(start + k) % n] for k in range(width)]
        # A door must lie on one side: its cells share a row or a column.
        if len({r for r, _ in cells}) > 1 and len({c for _, c in cells}) > 1:
            continue
        if all(min(abs(start - t) % n, n - abs(start - t) % n) >= spacing + width for t in taken):
            taken.append(start)
            for cell in cells:
                layout.open_exit(cell)
    if len(taken) < count:
        raise GenerationError(
            f"--exits: {count} doors of width {width} do not fit on the border of a {layout.rows}x{layout.cols} grid."
        )


# --------------------------------------------------------------------------
# Families


def _office(draws, p):
    rows, cols, h, w = p["rows"], p["cols"], p["room"], p["corridor"]
    unit = 2 * h + w + 3
    if rows - 1 < unit:
        raise GenerationError(
            f"office --rows: at least {unit + 1} rows are needed for rooms of {h} and a corridor of {w}, got {rows}."
        )
    if cols < 2 * h + 4:
        raise GenerationError(f"office --cols: at least {2 * h + 4} columns are needed for rooms of {h}, got {cols}.")
    layout = Layout(rows, cols)
    layout.border()
    walls = layout.walls
    bands = []  # (top, bottom exclusive, door row, corridor side row)
    corridors = []  # (top, bottom exclusive)
    y = 1
    while y + unit - 1 <= rows - 1:
        top_rooms, wall_a = (y, y + h), y + h
        corridor = (y + h + 1, y + h + 1 + w)
        wall_b = corridor[1]
        low_rooms = (wall_b + 1, wall_b + 1 + h)
        walls |= {(wall_a, c) for c in range(cols)} | {(wall_b, c) for c in range(cols)}
        walls |= {(low_rooms[1], c) for c in range(cols)}
        bands.append([top_rooms[0], top_rooms[1], wall_a])
        bands.append([low_rooms[0], low_rooms[1], wall_b])
        corridors.append(corridor)
        y = low_rooms[1] + 1
    left = rows - 1 - y  # rows y .. rows - 2 are still unused
    if left >= h + w + 2:
        # One more band of rooms over a corridor along the bottom wall.
        corridor = (rows - 1 - w, rows - 1)
        walls |= {(corridor[0] - 1, c) for c in range(cols)}
        bands.append([y, corridor[0] - 1, corridor[0] - 1])
        corridors.append(corridor)
    elif left > 0:
        # Too few for that: the leftover rows join the last band of rooms.
        walls -= {(y - 1, c) for c in range(1, cols - 1)}
        bands[-1][1] = rows - 1
    for top, bottom, door_row in bands:
        x = 1
        while x < cols - 1:
            width = draws.between(max(2, h - 1), h + 2)
            if x + width >= cols - 3:
                width = cols - 1 - x
            else:
                walls |= {(r, x + width) for r in range(top, bottom)}
            door = draws.between(x, x + width - 1)
            walls.discard((door_row, door))
            x += width + 1
    # Vertical corridors join the horizontal ones.
    spines = []
    for k in range(max(1, cols // 50)):
        span = (cols - 2 - w) // max(1, cols // 50)
        s = 1 + k * span + draws.below(max(1, span - w))
        spines.append(s)
        walls -= {(r, c) for r in range(1, rows - 1) for c in range(s, s + w)}
    candidates = []
    for top, bottom in corridors:
        mid = (top + bottom - 1) // 2
        candidates += [(mid, 0), (mid, cols - 1)]
    for s in spines:
        mid = s + (w - 1) // 2
        candidates += [(0, mid), (rows - 1, mid)]
    candidates = sorted(set(candidates))
    if p["exits"] > len(candidates):
        raise GenerationError(
            f"office --exits: this floor has {len(candidates)} corridor ends for exits, got {p['exits']}."
        )
    for cell in sorted(draws.sample(candidates, p["exits"])):
        layout.open_exit(cell)
    return layout


def _hall(draws, p):
    rows, cols, size = p["rows"], p["cols"], p["pillar_size"]
    layout = Layout(rows, cols)
    layout.border()
    _doors_on_border(layout, draws, p["exits"], p["door"], spacing=3)
    low, high_r, high_c = 3, rows - 4 - size, cols - 4 - size
    if high_r < low or high_c < low:
        raise GenerationError(f"hall --pillar-size: pillars of {size} do not fit a {rows}x{cols} hall.")
    for _ in range(p["pillars"]):
        r, c = draws.between(low, high_r), draws.between(low, high_c)
        layout.walls |= {(r + i, c + j) for i in range(size) for j in range(size)}
    return layout


def _bottleneck(draws, p):
    rows, cols, width, length = p["rows"], p["cols"], p["width"], p["length"]
    if width > rows - 4:
        raise GenerationError(f"bottleneck --width: at most {rows - 4} for {rows} rows, got {width}.")
    if length > cols - 8:
        raise GenerationError(f"bottleneck --length: at most {cols - 8} for {cols} columns, got {length}.")
    if p["exits"] > width:
        raise GenerationError(f"bottleneck --exits: at most the corridor width {width}, got {p['exits']}.")
    layout = Layout(rows, cols)
    layout.border()
    mouth = cols - 1 - length  # first column of the corridor
    top = draws.between(2, rows - 2 - width)
    corridor = range(top, top + width)
    layout.walls |= {(r, c) for r in range(1, rows - 1) for c in range(mouth, cols - 1) if r not in corridor}
    # Tables: short wall segments in the room, kept off the corridor's mouth.
    for _ in range(p["tables"]):
        horizontal = draws.below(2)
        span = draws.between(2, 4)
        last_r, last_c = rows - 3 - (0 if horizontal else span), mouth - 4 - (span if horizontal else 0)
        if last_r < 2 or last_c < 2:
            continue  # no room for this table
        r, c = draws.between(2, last_r), draws.between(2, last_c)
        cells = [(r, c + k) if horizontal else (r + k, c) for k in range(span)]
        if max(cc for _, cc in cells) >= mouth - 3:
            continue
        layout.walls |= set(cells)
    offset = (width - p["exits"]) // 2
    for r in range(top + offset, top + offset + p["exits"]):
        layout.open_exit((r, cols - 1))
    # The fire starts in the room: that is where it can close the way out.
    layout.ignition_pools = [
        sorted((r, c) for r in range(1, rows - 1) for c in range(1, mouth) if (r, c) not in layout.walls)
    ] * p["ignitions"]
    return layout


def _multi_exit(draws, p):
    rows, cols = p["rows"], p["cols"]
    if p["near_exits"] > p["exits"]:
        raise GenerationError(f"multi-exit --near-exits: at most --exits ({p['exits']}), got {p['near_exits']}.")
    if p["ignitions"] < p["near_exits"]:
        raise GenerationError(
            f"multi-exit --ignitions: at least --near-exits ({p['near_exits']}), got {p['ignitions']}."
        )
    layout = Layout(rows, cols)
    layout.border()
    _doors_on_border(layout, draws, p["exits"], 1, spacing=max(3, (rows + cols) // (2 * p["exits"])))
    # Partitions: wall segments with a two-cell gap, inside the building.
    for _ in range(p["partitions"]):
        horizontal = draws.below(2)
        extent = cols if horizontal else rows
        span = draws.between(extent // 4, extent // 2)
        fixed = draws.between(3, (rows if horizontal else cols) - 4)
        start = draws.between(2, extent - 2 - span)
        gap = draws.between(start, start + span - 2)
        for k in range(start, start + span):
            if k in (gap, gap + 1):
                continue
            layout.walls.add((fixed, k) if horizontal else (k, fixed))
    for cell in layout.exits:
        layout.walls.discard(cell)
    near = p["near"]
    pools = []
    # At least two steps from the exit: next to it, an ignition would seal a door at t = 0, not threaten it.
    for e in draws.sample(layout.exits, p["near_exits"]):
        pools.append(
            sorted(
                (r, c)
                for r in range(e[0] - near, e[0] + near + 1)
                for c in range(e[1] - near, e[1] + near + 1)
                if 0 < r < rows - 1 and 0 < c < cols - 1 and 2 <= abs(r - e[0]) + abs(c - e[1]) <= near
            )
        )
    layout.ignition_pools = pools + [None] * (p["ignitions"] - len(pools))
    return layout


@dataclasses.dataclass(frozen=True, eq=False)
class Family:
    name: str
    description: str
    build: object
    parameters: tuple


FAMILIES = (
    Family("office", "office floor: rooms with one door each on corridors, corridor-end exits", _office, _OFFICE),
    Family("hall", "open hall with square pillars and doors on the walls", _hall, _HALL),
    Family(
        "bottleneck",
        "a crowded room emptying through one corridor; the fire starts in the room",
        _bottleneck,
        _BOTTLENECK,
    ),
    Family("multi-exit", "building with several exits, some next to where the fire starts", _multi_exit, _MULTI_EXIT),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


def family(name):
    for f in FAMILIES:
        if f.name == name:
            return f
    raise GenerationError(f"unknown family {name!r}; expected one of {', '.join(FAMILY_NAMES)}.")


# --------------------------------------------------------------------------
# Generation


def resolve_parameters(name, given):
    """The family's parameters: defaults, overridden by ``given`` (checked)."""
    fam = family(name)
    known = {q.name: q for q in fam.parameters}
    for key in given:
        if key not in known:
            raise GenerationError(
                f"{name}: unknown parameter --{key.replace('_', '-')}; "
                f"expected {', '.join('--' + k.replace('_', '-') for k in known)}."
            )
    return {q.name: q.check(given.get(q.name, q.default), name) for q in fam.parameters}


def generate(name, seed, scenario_id=None, **given):
    """The scenario dict of family ``name`` with ``seed`` and parameters ``given``."""
    if type(seed) is not int or not 0 <= seed <= MAX_SEED:
        raise GenerationError(f"--seed: expected an integer with 0 <= seed < 2^64, got {seed!r}.")
    params = resolve_parameters(name, given)
    draws = Draws(name, seed)
    layout = family(name).build(draws, params)
    return _finish(layout, draws, params, scenario_id or f"{name}-{seed}")


def generate_bytes(name, seed, scenario_id=None, **given):
    """The generated scenario as canonical JSON plus a newline: the bytes ``ember generate`` writes."""
    return canonical_json(generate(name, seed, scenario_id, **given)) + b"\n"


def _finish(layout, draws, p, scenario_id):
    rows, cols = layout.rows, layout.cols
    grid = Grid(rows, cols, [r * cols + c for r, c in layout.walls])
    exits = sorted({r * cols + c for r, c in layout.exits})
    exit_set = set(exits)
    open_cells = [i for i in range(grid.size) if grid.open[i] and i not in exit_set]
    pools = layout.ignition_pools or [None] * p["ignitions"]
    pools = [open_cells if pool is None else [r * cols + c for r, c in pool] for pool in pools]
    pools = [[i for i in pool if grid.open[i] and i not in exit_set] for pool in pools]
    if any(not pool for pool in pools):
        raise GenerationError(f"{scenario_id}: no open cell is left for an ignition.")
    for _ in range(MAX_ATTEMPTS):
        ignitions = set()
        for pool in pools:
            ignitions.add(draws.choice(pool))
        passable = bytearray(grid.open)
        for cell in ignitions:
            passable[cell] = 0
        dist0 = grid.distances(exits, passable)
        near_fire = _within(grid, ignitions, FIRE_CLEARANCE)
        places = [i for i in open_cells if dist0[i] != UNREACHABLE and i not in near_fire]
        if len(places) < p["people"]:
            continue
        cut = _cut_places(grid, exits, ignitions, places, dist0)
        if not cut:
            continue  # this fire cuts nobody's route: draw another
        # One person where the fire can cut the route, the others anywhere reachable.
        first = draws.choice(cut)
        people = [first] + draws.sample([i for i in places if i != first], p["people"] - 1)
        return validate_scenario(_scenario(layout, grid, exits, ignitions, people, p, scenario_id))
    raise GenerationError(
        f"{scenario_id}: no draw in {MAX_ATTEMPTS} placed {p['people']} people, all able to reach an exit, "
        f"with a fire that can cut a route; try other parameters (fewer people, a larger grid, another seed)."
    )


def _within(grid, sources, reach):
    """Cells at most ``reach`` steps from ``sources`` through open cells (sources included)."""
    dist = grid.distances(sorted(sources), grid.open)
    return {i for i in range(grid.size) if 0 <= dist[i] <= reach} if reach >= 0 else set()


def fire_zone(grid, ignitions):
    """The cells within ``FIRE_REACH`` steps of the ignitions: what 'the fire can burn soon' means here."""
    return _within(grid, ignitions, FIRE_REACH)


def _cut_places(grid, exits, ignitions, places, dist0):
    """The places outside the fire zone whose shortest exit route burning the zone lengthens or cuts."""
    zone = fire_zone(grid, ignitions)
    passable = bytearray(grid.open)
    for cell in zone:
        passable[cell] = 0
    dist1 = grid.distances(exits, passable)
    return [cell for cell in places if cell not in zone and (dist1[cell] == UNREACHABLE or dist1[cell] > dist0[cell])]


def _scenario(layout, grid, exits, ignitions, people, p, scenario_id):
    cols = grid.cols
    width = len(str(len(people) - 1))
    max_steps = p["max_steps"] or 2 * (grid.rows + cols) + 2 * len(people) // len(exits)
    return {
        "schema_version": SCHEMA_VERSION,
        "scenario_id": scenario_id,
        "grid": {"rows": grid.rows, "cols": cols},
        "walls": [[r, c] for r, c in sorted(layout.walls - {divmod(e, cols) for e in exits})],
        "exits": [{"exit_id": f"e{k + 1}", "position": [e // cols, e % cols]} for k, e in enumerate(exits)],
        "people": [{"person_id": f"p{k:0{width}d}", "position": [i // cols, i % cols]} for k, i in enumerate(people)],
        "fire": {
            "ignitions": [[i // cols, i % cols] for i in sorted(ignitions)],
            "spread_probability": p["spread"],
            "enter_fire": p["enter_fire"],
        },
        "termination": {"max_steps": max_steps},
    }
