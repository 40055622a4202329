"""The floor as PedPy geometry: walkable area (exactly the cells people can be on) and the exits' lines."""

import json
from fractions import Fraction

import pytest

from ember.errors import MissingExtraError
from ember.generate import generate
from ember.interop.geometry import FloorPlan, geometry_document, write_geometry
from ember.interop.scale import Scale
from ember.scenario import compile_scenario, load_scenario

from helpers.scenarios import picture_scenario

shapely = pytest.importorskip("shapely")  # the analysis extra: CI installs it, so there this runs


def cells_inside(document, scenario, cell=0.4):
    """The set of [row, col] whose centres lie inside the walkable area."""
    polygon = shapely.from_wkt(document["walkable_area"])
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    inside = set()
    for row in range(rows):
        for col in range(cols):
            if polygon.contains(shapely.Point((col + 0.5) * cell, (rows - row - 0.5) * cell)):
                inside.add((row, col))
    return inside


def reachable(scenario, starts):
    """4-connected non-wall cells reached from ``starts`` (a plain search, the reference)."""
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    walls = {tuple(c) for c in scenario["walls"]}
    seen, todo = set(starts), list(starts)
    while todo:
        r, c = todo.pop()
        for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= n[0] < rows and 0 <= n[1] < cols and n not in walls and n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


SCENARIOS = [
    ("office", lambda: load_scenario("builtin:office")),
    ("bottleneck", lambda: load_scenario("builtin:bottleneck")),
    ("v1-small-hall-block", lambda: load_scenario("builtin:ember-v1/small-hall-block")),
    ("multi-exit", lambda: generate("multi-exit", 3, rows=20, cols=24, people=20, exits=5)),
    ("hall-pillars", lambda: generate("hall", 14)),  # pillars enclose a free region nobody can enter
]


@pytest.mark.parametrize("factory", [s[1] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_one_region_the_area_is_exactly_its_cells(factory):
    scenario = factory()
    document = geometry_document(scenario)
    starts = [tuple(p["position"]) for p in scenario["people"]] + [tuple(e["position"]) for e in scenario["exits"]]
    region = reachable(scenario, starts)
    assert document["walkable_regions"] == 1
    assert document["walls_in_walkable_area"] == []
    assert cells_inside(document, scenario) == region
    polygon = shapely.from_wkt(document["walkable_area"])
    assert polygon.geom_type == "Polygon" and polygon.is_valid and polygon.is_simple
    assert polygon.area == pytest.approx(len(region) * 0.16, rel=1e-12)


def test_free_cells_nobody_can_reach_are_left_out():
    scenario = generate("hall", 14)
    free = {(r, c) for r in range(scenario["grid"]["rows"]) for c in range(scenario["grid"]["cols"])}
    free -= {tuple(w) for w in scenario["walls"]}
    inside = cells_inside(geometry_document(scenario), scenario)
    assert inside < free  # this floor has an enclosed free pocket


def test_a_sealed_room_is_joined_through_its_walls():
    scenario = picture_scenario(
        [
            ".....",
            ".###.",
            ".#a#.",
            ".###.",
            "0...b",
        ]
    )
    document = geometry_document(scenario)
    assert document["walkable_regions"] == 2
    ring = [[1, 1], [1, 2], [1, 3], [2, 1], [2, 3], [3, 1], [3, 2], [3, 3]]
    assert document["walls_in_walkable_area"] == ring
    assert shapely.from_wkt(document["walkable_area"]).equals(shapely.box(0, 0, 2.0, 2.0))


def test_regions_side_by_side_are_joined_by_the_fewest_pieces():
    # a wall column splits the floor; a second, thicker wall block stays a hole
    scenario = picture_scenario(
        [
            "a.#...",
            "..#.##",
            "0.#.##",
            "..#..b",
        ]
    )
    document = geometry_document(scenario)
    assert document["walkable_regions"] == 2
    assert document["walls_in_walkable_area"] == [[0, 2], [1, 2], [2, 2], [3, 2]]
    inside = cells_inside(document, scenario)
    assert (1, 4) not in inside and (0, 2) in inside


def test_regions_apart_by_an_empty_room_are_joined_through_it():
    # the middle region holds nobody and no exit: the search crosses wall, empty room, wall
    scenario = picture_scenario(["a#.#0"])
    document = geometry_document(scenario)
    assert document["walkable_regions"] == 2
    assert document["walls_in_walkable_area"] == [[0, 1], [0, 3]]
    assert len(cells_inside(document, scenario)) == 5


def line_cells(text, scenario, cell=0.4):
    """The two cells a measurement line separates, from its midpoint."""
    (x1, y1), (x2, y2) = shapely.from_wkt(text).coords
    rows = scenario["grid"]["rows"]
    if x1 == x2:  # vertical: the cells west and east of it
        row = rows - 1 - int(min(y1, y2) / cell + 1e-9)
        col = round(x1 / cell)
        return {(row, col - 1), (row, col)}
    row = rows - round(y1 / cell)
    col = int(min(x1, x2) / cell + 1e-9)
    return {(row - 1, col), (row, col)}


def test_one_line_per_way_into_an_exit_on_the_shared_edge_exit_on_the_left():
    scenario = picture_scenario(
        [
            "..#..",
            "..0..",
            "a.12.",
            ".....",
        ]
    )
    document = geometry_document(scenario)
    lines, entries = document["measurement_lines"], document["measurement_line_entries"]
    # e0 [1, 2]: wall to the north, exit e1 to the south: west and east only
    assert entries == {"e0": [[1, 1], [1, 3]], "e1": [[3, 2], [2, 1]], "e2": [[1, 3], [3, 3], [2, 4]]}
    for exit_id, position in (("e0", (1, 2)), ("e1", (2, 2)), ("e2", (2, 3))):
        for text, entry in zip(lines[exit_id], entries[exit_id]):
            assert line_cells(text, scenario) == {position, tuple(entry)}
            (x1, y1), (x2, y2) = shapely.from_wkt(text).coords
            cx, cy = (position[1] + 0.5) * 0.4, (4 - position[0] - 0.5) * 0.4
            assert (x2 - x1) * (cy - y1) - (y2 - y1) * (cx - x1) > 0  # the exit's centre is on the left
    assert geometry_document(load_scenario("builtin:small-room"))["measurement_lines"]  # every exit has its key


def test_coordinates_are_grid_lines_exactly_in_lines_and_area():
    """Every vertex is k x cell rounded once: a line's ends are the polygon's own floats."""
    scenario = load_scenario("builtin:office")
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    cell = Fraction(3, 10)
    xs = {float(k * cell) for k in range(cols + 1)}
    ys = {float(k * cell) for k in range(rows + 1)}
    document = geometry_document(scenario, Scale("0.3"))
    polygon = shapely.from_wkt(document["walkable_area"])
    points = list(polygon.exterior.coords) + [p for ring in polygon.interiors for p in ring.coords]
    points += [
        p for texts in document["measurement_lines"].values() for text in texts for p in shapely.from_wkt(text).coords
    ]
    assert points and all(x in xs and y in ys for x, y in points)


def test_the_file_is_json_with_wkt(tmp_path):
    scenario = load_scenario("builtin:small-room")
    document = geometry_document(scenario)
    path = tmp_path / "g.json"
    write_geometry(document, path)
    assert json.loads(path.read_text()) == document
    assert document["format"] == "ember-pedpy-geometry/1.0"
    assert document["cell_size_m"] == "0.4"
    assert document["scenario_hash"] == compile_scenario(scenario).hash


def test_floor_plan_needs_no_shapely():
    plan = FloorPlan(compile_scenario(load_scenario("builtin:small-room")))
    assert plan.regions == 1 and plan.covered_walls == []


def test_without_shapely_a_missing_extra_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_shapely(name, *args, **kwargs):
        if name == "shapely" or name.startswith("shapely."):
            raise ImportError("No module named 'shapely'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_shapely)
    with pytest.raises(MissingExtraError, match=r"analysis"):
        geometry_document(load_scenario("builtin:small-room"))
