"""A scenario's floor as PedPy geometry: the walkable area and the exits' measurement lines.

**Walkable area.** The union of the squares of the cells people can
stand on: every non-wall cell (exit cells included) of each region that
holds a person or an exit, regions being 4-connected, as people move;
walls are holes or notches.  Regions nobody can ever enter are left out
(PedPy: "parts which ... can not be reached by the pedestrians can be
excluded").  PedPy's ``WalkableArea`` is one polygon, so when people and
exits lie in several regions (a sealed room, as in ``builtin:long-
horizon``) the regions are joined by the pieces between them, fewest
pieces first: a piece is a 4-connected set of walls, or a region of free
cells holding neither people nor exits.  The walls so covered are listed
beside the area (``walls_in_walkable_area``); with one region there are
none.

**Measurement lines.** An active person is never on an exit cell
(simulator.md §3: standing on one is being evacuated, and nobody starts
on one), so every evacuation is a move onto the exit cell from one of its
4-neighbours that is neither a wall nor an exit.  Each exit gets one line
per such neighbour, on the edge the two cells share: that move, from the
neighbour's centre to the exit's, crosses exactly that line, ends half a
cell past it, and crosses no other exit's line; no other move touches
it.  With the evacuee kept at the exit for one more frame
(``trajectories``), PedPy counts each evacuation as one crossing of one
line of its exit at the evacuation step.  Lines go counter-clockwise
round their exit cell (the exit on their left), in the order of the
neighbours north, south, west, east.

The JSON file holds the geometry as WKT, which PedPy's constructors take
as they are: ``WalkableArea(doc["walkable_area"])``,
``MeasurementLine(text)`` for each text of ``doc["measurement_lines"][exit_id]``.
shapely (the ``analysis`` extra) builds the area's polygon; it is
imported when called.
"""

import json
from array import array
from collections import deque

from ..errors import MissingExtraError
from ..files import output_file
from ..grid.cells import around
from ..scenario import compile_scenario
from .coordinates import PlanCoordinates
from .scale import Scale, decimal_text

INSTALL_HINT = "pip install 'ember-eval[analysis]'"
GEOMETRY_FORMAT = "ember-pedpy-geometry/1.0"
NORTH, SOUTH, WEST, EAST = range(4)  # the order of grid.around


def _shapely():
    try:
        import shapely
    except ImportError as exc:
        raise MissingExtraError(
            f"PedPy geometry needs shapely, of the 'analysis' extra ({exc}): {INSTALL_HINT}"
        ) from exc
    return shapely


# --- which cells the walkable area covers -------------------------------------------


class Pieces:
    """The grid cut into pieces: 4-connected sets of walls and 4-connected regions of free cells.

    ``label[cell]`` is the piece of a cell; pieces are numbered in the order
    of their first cell; ``neighbours[p]`` the sorted pieces that share an
    edge with piece ``p``.
    """

    def __init__(self, grid):
        size, cols, is_open = grid.size, grid.cols, grid.open
        self.label = label = array("i", [-1]) * size
        self.wall = []  # per piece: True for walls
        for start in range(size):
            if label[start] >= 0:
                continue
            piece, kind = len(self.wall), is_open[start]
            self.wall.append(not kind)
            label[start] = piece
            stack = [start]
            while stack:
                cell = stack.pop()
                for other in around(cell, cols, size):
                    if other >= 0 and label[other] < 0 and is_open[other] == kind:
                        label[other] = piece
                        stack.append(other)
        touching = [set() for _ in self.wall]
        for cell in range(size):
            here = label[cell]
            for other in (cell + 1 if (cell + 1) % cols else -1, cell + cols if cell + cols < size else -1):
                if other >= 0 and label[other] != here:
                    touching[here].add(label[other])
                    touching[label[other]].add(here)
        self.neighbours = [sorted(t) for t in touching]

    def joined(self, wanted):
        """``wanted`` pieces (sorted) plus the pieces that join them, fewest first, as a set.

        Prim's way: from the first wanted piece, a breadth-first search to the
        nearest wanted piece not yet joined, whose path is then joined; again
        until all are.  Deterministic: searches go in piece order.
        """
        joined = {wanted[0]}
        missing = set(wanted[1:])
        while missing:
            parent = dict.fromkeys(sorted(joined))
            queue = deque(parent)
            found = None
            while found is None:
                piece = queue.popleft()  # the grid is connected: some wanted piece is reached
                for other in self.neighbours[piece]:
                    if other not in parent:
                        parent[other] = piece
                        if other in missing:
                            found = other
                            break
                        queue.append(other)
            while found is not None and found not in joined:
                joined.add(found)
                missing.discard(found)
                found = parent[found]
        return joined


class FloorPlan:
    """The cells the walkable area covers (module docstring), and the ways into each exit."""

    def __init__(self, compiled):
        self.compiled = compiled
        grid = self.grid = compiled.grid
        pieces = Pieces(grid)
        label = pieces.label
        wanted = sorted({label[cell] for cell in compiled.start_cells + compiled.exit_cells})
        covered_pieces = pieces.joined(wanted)
        self.covered = bytearray(label[cell] in covered_pieces for cell in range(grid.size))
        self.regions = len(wanted)
        self.covered_walls = [cell for cell in sorted(grid.walls) if self.covered[cell]]

    def entries(self, exit_cell):
        """(direction, neighbour) for each 4-neighbour an evacuee can come from: not a wall, not an exit."""
        grid, exits = self.grid, self.compiled.exit_at
        ways = []
        for direction, other in enumerate(around(exit_cell, grid.cols, grid.size)):
            if other >= 0 and grid.open[other] and other not in exits:
                ways.append((direction, other))
        return ways

    def runs(self):
        """Each row's maximal runs of covered cells, as (row, first col, last col + 1)."""
        cols, covered = self.grid.cols, self.covered
        for row in range(self.grid.rows):
            base, col = row * cols, 0
            while col < cols:
                if not covered[base + col]:
                    col += 1
                    continue
                first = col
                while col < cols and covered[base + col]:
                    col += 1
                yield row, first, col


# --- the geometry in metres --------------------------------------------------------


def measurement_line(coordinates, exit_row, exit_col, direction):
    """The shared edge of the exit cell and its neighbour in ``direction``, the exit on its left."""
    west, east = coordinates.edge_x(exit_col), coordinates.edge_x(exit_col + 1)
    south, north = coordinates.edge_y(exit_row + 1), coordinates.edge_y(exit_row)
    return {
        NORTH: ((east, north), (west, north)),
        SOUTH: ((west, south), (east, south)),
        WEST: ((west, north), (west, south)),
        EAST: ((east, south), (east, north)),
    }[direction]


def _point(x, y):
    return f"{x!r} {y!r}"


def line_wkt(segment):
    (x1, y1), (x2, y2) = segment
    return f"LINESTRING ({_point(x1, y1)}, {_point(x2, y2)})"


def walkable_polygon(plan, coordinates):
    """The shapely ``Polygon`` of the covered cells (collinear corners removed)."""
    shapely = _shapely()
    boxes = [
        shapely.box(
            coordinates.edge_x(first), coordinates.edge_y(row + 1), coordinates.edge_x(end), coordinates.edge_y(row)
        )
        for row, first, end in plan.runs()
    ]
    polygon = shapely.simplify(shapely.union_all(boxes), 0)
    if polygon.geom_type != "Polygon":  # the covered pieces are joined: cannot happen
        raise RuntimeError(f"the walkable area came out as a {polygon.geom_type}, not one polygon")
    return shapely.normalize(polygon)


def geometry_document(scenario, scale=None):
    """The geometry of ``scenario`` at ``scale`` (default 0.4 m cells) as a JSON-ready dict of WKT texts."""
    compiled = compile_scenario(scenario)
    scale = Scale() if scale is None else scale
    plan = FloorPlan(compiled)
    grid = compiled.grid
    coordinates = PlanCoordinates(grid.rows, grid.cols, scale.cell_size)
    polygon = walkable_polygon(plan, coordinates)
    lines, entries = {}, {}
    for exit_id, cell in zip(compiled.exit_ids, compiled.exit_cells):
        row, col = grid.cell(cell)
        ways = plan.entries(cell)
        lines[exit_id] = [line_wkt(measurement_line(coordinates, row, col, direction)) for direction, _ in ways]
        entries[exit_id] = [grid.cell(other) for _, other in ways]
    return {
        "format": GEOMETRY_FORMAT,
        "scenario_id": compiled.scenario_id,
        "scenario_hash": compiled.hash,
        "cell_size_m": decimal_text(scale.cell_size),
        "coordinates": (
            "metres; cell [row, col] spans x from col * cell_size to (col + 1) * cell_size and "
            "y from (rows - row - 1) * cell_size to (rows - row) * cell_size (north is up)"
        ),
        "walkable_area": _shapely().to_wkt(polygon, rounding_precision=-1),
        "walkable_regions": plan.regions,
        "walls_in_walkable_area": [grid.cell(cell) for cell in plan.covered_walls],
        "measurement_lines": lines,
        "measurement_line_entries": entries,
    }


def write_geometry(document, output):
    """Write a ``geometry_document`` to ``output`` (a path or a binary stream) as JSON."""
    data = (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    if hasattr(output, "write"):
        output.write(data)
        return
    with output_file(output) as stream:
        stream.write(data)
