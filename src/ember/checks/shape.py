"""Types, key sets and orderings of each record part (stage 2, read-only).

Each function raises ``MetricsInputError`` naming the JSON path and giving
the expected and actual values.  The checks compare with exact types
(``type(x) is int``) because ``True == 1`` in Python: a boolean where the
record needs an integer must never pass as one.  Paths are only formatted
when a check fails, so the happy path does no string work.
"""

from ..errors import MetricsInputError
from ..scenario import ID_PATTERN

ACTIONS = frozenset(("stay", "north", "south", "west", "east"))
# fmt: off
OUTCOMES = frozenset(
    ("stayed", "moved", "blocked_boundary", "blocked_wall", "blocked_fire",
     "blocked_occupied", "blocked_conflict", "blocked_cycle")
)
# fmt: on
STATUSES = frozenset(("active", "evacuated", "casualty"))
CAUSES = frozenset(("entered_fire", "fire_spread"))
REASONS = (None, "all_resolved", "max_steps")

HEADER_KEYS = frozenset(
    ("schema_version", "simulator_version", "observation_version", "scenario_id", "scenario_hash", "seed")
)
SNAPSHOT_KEYS = frozenset(("step", "people", "burning", "trapped", "terminated", "termination_reason"))
FINAL_KEYS = frozenset(("step", "people", "trapped", "termination_reason"))
STEP_KEYS = frozenset(("step", "actions", "movements", "ignitions", "evacuations", "casualties", "snapshot"))
PERSON_KEYS = frozenset(("person_id", "status", "position"))
MOVE_KEYS = frozenset(("person_id", "origin", "target", "outcome"))
EVAC_KEYS = frozenset(("person_id", "exit_id"))
CASUALTY_KEYS = frozenset(("person_id", "cause"))


def fail(path, message):
    raise MetricsInputError(f"{path}: {message}")


def describe(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 80 else "a long string"
    return f"{type(value).__name__} {value!r}"


# Objects and arrays are checked with isinstance: the public simulator's own snapshots hold read-only
# subclasses (``ember.frozen``), which are a JSON object and array to every encoder; parsed JSON is exact.
def require_object(value, path, keys):
    if not isinstance(value, dict):
        fail(path, f"expected an object, got {describe(value)}.")
    if value.keys() != keys:
        missing = sorted(keys - value.keys())
        if missing:
            fail(path, f"missing key {missing[0]!r}; expected exactly the keys {sorted(keys)}.")
        extra = sorted(value.keys() - keys)
        fail(f"{path}.{extra[0]}", f"unexpected key {extra[0]!r}; expected exactly the keys {sorted(keys)}.")


def require_list(value, path):
    if not isinstance(value, list):
        fail(path, f"expected a list, got {describe(value)}.")


def require_int(value, path):
    if type(value) is not int:
        fail(path, f"expected an integer, got {describe(value)}.")


def require_id(value, path):
    if type(value) is not str or not ID_PATTERN.fullmatch(value):
        fail(path, f"expected an ID, got {describe(value)}.")


def require_pair(value, path):
    """A ``[row, col]`` pair of integers, in bounds or not."""
    if not isinstance(value, list) or len(value) != 2 or type(value[0]) is not int or type(value[1]) is not int:
        fail(
            path,
            "expected a cell [row, col] of two integers, got "
            f"{describe(value) if not isinstance(value, list) else list(value)!r}.",
        )


def cell_index(value, path, grid):
    """Flat index of an in-bounds cell, or a failure naming the path."""
    require_pair(value, path)
    row, col = value
    if not (0 <= row < grid.rows and 0 <= col < grid.cols):
        fail(path, f"cell {value!r} is out of bounds of the {grid.rows}x{grid.cols} grid.")
    return grid.index(row, col)


def sorted_cells(value, path, grid):
    """Flat indexes of a strictly increasing list of in-bounds cells."""
    require_list(value, path)
    cells = []
    last = -1
    for j, item in enumerate(value):
        index = cell_index(item, f"{path}[{j}]", grid)
        if index <= last:
            what = "listed twice" if index == last else "out of order"
            fail(f"{path}[{j}]", f"cell {item!r} is {what}; cells must be sorted by (row, col) without duplicates.")
        cells.append(index)
        last = index
    return cells


def sorted_ids(value, path):
    require_list(value, path)
    last = None
    for j, item in enumerate(value):
        require_id(item, f"{path}[{j}]")
        if last is not None and item <= last:
            what = "listed twice" if item == last else "out of order"
            fail(f"{path}[{j}]", f"ID {item!r} is {what}; IDs must be sorted without duplicates.")
        last = item


def check_header(value, path="$.header"):
    require_object(value, path, HEADER_KEYS)
    for key in ("schema_version", "simulator_version", "observation_version", "scenario_hash"):
        if type(value[key]) is not str:
            fail(f"{path}.{key}", f"expected a string, got {describe(value[key])}.")
    require_id(value["scenario_id"], f"{path}.scenario_id")
    seed = value["seed"]
    require_int(seed, f"{path}.seed")
    if not 0 <= seed < 2**64:
        fail(f"{path}.seed", f"expected 0 <= seed < 2^64, got {seed}.")


def check_people(value, path, scenario):
    """The people list of a snapshot: every scenario person, sorted by ID.

    Returns (statuses, flat positions) indexed like ``scenario.person_ids``.
    """
    require_list(value, path)
    ids = scenario.person_ids
    grid = scenario.grid
    if len(value) != len(ids):
        fail(path, f"expected {len(ids)} people (every scenario person), got {len(value)}.")
    statuses, positions = [], []
    for j, person in enumerate(value):
        where = f"{path}[{j}]"
        require_object(person, where, PERSON_KEYS)
        if person["person_id"] != ids[j]:
            fail(
                f"{where}.person_id", f"expected {ids[j]!r} (people sorted by ID), got {describe(person['person_id'])}."
            )
        status = person["status"]
        if type(status) is not str or status not in STATUSES:
            fail(f"{where}.status", f"expected 'active', 'evacuated' or 'casualty', got {describe(status)}.")
        statuses.append(status)
        positions.append(cell_index(person["position"], f"{where}.position", grid))
    return statuses, positions


def check_reason(value, path):
    if type(value) not in (str, type(None)) or value not in REASONS:
        fail(path, f"expected null, 'all_resolved' or 'max_steps', got {describe(value)}.")


def check_snapshot(value, path, scenario):
    """Shape of a snapshot; returns (statuses, positions, burning flat cells)."""
    require_object(value, path, SNAPSHOT_KEYS)
    require_int(value["step"], f"{path}.step")
    statuses, positions = check_people(value["people"], f"{path}.people", scenario)
    burning = sorted_cells(value["burning"], f"{path}.burning", scenario.grid)
    sorted_ids(value["trapped"], f"{path}.trapped")
    if type(value["terminated"]) is not bool:
        fail(f"{path}.terminated", f"expected true or false, got {describe(value['terminated'])}.")
    check_reason(value["termination_reason"], f"{path}.termination_reason")
    return statuses, positions, burning


def check_final_shape(value, path, scenario):
    require_object(value, path, FINAL_KEYS)
    require_int(value["step"], f"{path}.step")
    check_people(value["people"], f"{path}.people", scenario)
    sorted_ids(value["trapped"], f"{path}.trapped")
    check_reason(value["termination_reason"], f"{path}.termination_reason")


def check_step(value, path, scenario):
    """Shape of a step; returns the snapshot's (statuses, positions) and the ignited cells."""
    require_object(value, path, STEP_KEYS)
    require_int(value["step"], f"{path}.step")
    actions = value["actions"]
    if not isinstance(actions, dict):
        fail(f"{path}.actions", f"expected an object {{person_id: action}}, got {describe(actions)}.")
    for pid, action in actions.items():
        require_id(pid, f"{path}.actions")
        if type(action) is not str or action not in ACTIONS:
            fail(f"{path}.actions.{pid}", f"expected one of {sorted(ACTIONS)}, got {describe(action)}.")
    _check_events(value["movements"], f"{path}.movements", MOVE_KEYS, _check_movement)
    ignited = sorted_cells(value["ignitions"], f"{path}.ignitions", scenario.grid)
    _check_events(value["evacuations"], f"{path}.evacuations", EVAC_KEYS, _check_evacuation)
    _check_events(value["casualties"], f"{path}.casualties", CASUALTY_KEYS, _check_casualty)
    status, position, _ = check_snapshot(value["snapshot"], f"{path}.snapshot", scenario)
    return status, position, ignited


def _check_events(value, path, keys, check_item):
    """A list of per-person objects sorted by person ID without duplicates."""
    require_list(value, path)
    last = None
    for j, item in enumerate(value):
        where = f"{path}[{j}]"
        require_object(item, where, keys)
        pid = item["person_id"]
        require_id(pid, f"{where}.person_id")
        if last is not None and pid <= last:
            what = "listed twice" if pid == last else "out of order"
            fail(
                f"{where}.person_id",
                f"person {pid!r} is {what}; entries must be sorted by person ID without duplicates.",
            )
        last = pid
        check_item(item, where)


def _check_movement(item, where):
    require_pair(item["origin"], f"{where}.origin")
    if item["target"] is not None:
        require_pair(item["target"], f"{where}.target")
    outcome = item["outcome"]
    if type(outcome) is not str or outcome not in OUTCOMES:
        fail(f"{where}.outcome", f"expected one of {sorted(OUTCOMES)}, got {describe(outcome)}.")


def _check_evacuation(item, where):
    require_id(item["exit_id"], f"{where}.exit_id")


def _check_casualty(item, where):
    cause = item["cause"]
    if type(cause) is not str or cause not in CAUSES:
        fail(f"{where}.cause", f"expected 'entered_fire' or 'fire_spread', got {describe(cause)}.")
