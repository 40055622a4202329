"""Scenario loading and validation (simulator.md §2).

``load_scenario`` accepts every source output.md lists and returns the
validated scenario as a plain dict (a private deep copy: callers may mutate
their own input afterwards without effect).  ``compile_scenario`` adds the
derived geometry the simulator, the checks and the metrics share, so each
scenario is validated and indexed once per episode.
"""

import json
import os
import re

from .canonical import canonical_copy, canonical_json
from .errors import ScenarioError, did_you_mean
from .grid.cells import UNREACHABLE
from .grid.floor import Grid
from .strict_json import DuplicateKey, loads_without_duplicates
from .versions import SCHEMA_VERSION

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PROBABILITY_PATTERN = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
MAX_CELLS = 16_777_216
MAX_DENOMINATOR = 2**32
MAX_HORIZON = 2**31 - 1
ENTER_FIRE_MODES = ("casualty", "block")
BUILTIN_PREFIX = "builtin:"
# The longest scenario JSON text read (bytes, or characters of a str): far
# above a canonical 4096 x 4096 grid with every cell a wall (about 200 MB),
# and a bound on what a path such as /dev/zero can make EMBER hold.
MAX_SCENARIO_BYTES = 256 * 1024 * 1024

_TOP_KEYS = ("schema_version", "scenario_id", "grid", "walls", "exits", "people", "fire", "termination")


# --------------------------------------------------------------------------
# Sources


def builtin_names():
    """Names of the scenarios shipped as package data, sorted; a suite's as ``SUITE/NAME`` (e.g. ember-v1/...)."""
    from importlib import resources  # only for built-in scenarios: a scenario file never pays for it

    folder = resources.files("ember") / "scenarios"
    names = [p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json")]
    for suite in folder.iterdir():
        if suite.is_dir() and not suite.name.startswith(("_", ".")):
            names += [f"{suite.name}/{p.name[:-5]}" for p in suite.iterdir() if p.name.endswith(".json")]
    return sorted(names)


def _builtin_bytes(name):
    names = builtin_names()
    if name not in names:
        suggestion = did_you_mean(name, names)
        if suggestion:
            raise ScenarioError(
                f"$: there is no built-in scenario named {name!r}{suggestion} ('ember scenarios' lists all)"
            )
        known = [n for n in names if "/" not in n]
        suites = sorted({n.split("/")[0] for n in names if "/" in n})
        raise ScenarioError(
            f"$: there is no built-in scenario named {name!r}; "
            f"known: {', '.join(known)}, and the suites {', '.join(s + '/NAME' for s in suites)} "
            "('ember scenarios' lists all)."
        )
    from importlib import resources

    folder = resources.files("ember") / "scenarios"
    *suite, base = name.split("/")  # a name from builtin_names(): at most one suite folder
    for part in suite:
        folder = folder / part
    return (folder / f"{base}.json").read_bytes()


class _BadNumber:
    """A JSON number a scenario cannot hold (non-integer, NaN/Infinity, or too
    many digits to convert), kept as parsed so that validation, which checks
    the type of every value, names its path (simulator.md §2)."""

    __slots__ = ("token", "kind")

    def __init__(self, token, kind):
        self.token = token
        self.kind = kind

    def __repr__(self):
        return self.token if len(self.token) <= 40 else f"{self.token[:20]}...({len(self.token)} characters)"


def _parse_float(token):
    return _BadNumber(token, "non-integer number")


def _parse_constant(token):
    return _BadNumber(token, "non-JSON constant")


def _parse_int(token):
    try:
        return int(token)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        return _BadNumber(token, "integer with too many digits")


def _path_of(segments):
    """The JSON path of ``segments`` (keys and indices from the top), as validation names one."""
    path = "$"
    for segment in segments:
        path = f"{path}[{segment}]" if type(segment) is int else _member(path, segment)
    return path


def parse_scenario_json(data):
    """Parse scenario JSON text strictly: no BOM, no duplicate keys, integers only."""
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"$: the scenario JSON text is longer than {MAX_SCENARIO_BYTES:,} bytes.")
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if data.startswith(b"\xef\xbb\xbf"):
            raise ScenarioError("$: the scenario starts with a UTF-8 byte-order mark, which is not allowed.")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"$: the scenario is not valid UTF-8 ({exc.reason} at byte {exc.start}).") from exc
    if data.startswith("\ufeff"):
        raise ScenarioError("$: the scenario starts with a byte-order mark, which is not allowed.")
    try:
        return loads_without_duplicates(
            data, where=True, parse_float=_parse_float, parse_int=_parse_int, parse_constant=_parse_constant
        )
    except DuplicateKey as exc:
        raise ScenarioError(f"{_path_of(exc.path)}: duplicate key {_show(exc.key)}.") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"$: the scenario is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from exc
    except RecursionError as exc:
        raise ScenarioError("$: the scenario nests too deeply to be a scenario.") from exc


def _read_source(source):
    """Turn any accepted source into a Python value (not yet validated)."""
    if isinstance(source, dict):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return parse_scenario_json(source)
    if isinstance(source, str):
        if source.startswith(BUILTIN_PREFIX):
            return parse_scenario_json(_builtin_bytes(source[len(BUILTIN_PREFIX) :]))
        if source.startswith("\ufeff") or source.lstrip().startswith("{"):
            return parse_scenario_json(source)
        return _read_path(source)
    if isinstance(source, os.PathLike):
        return _read_path(source)
    if hasattr(source, "read"):
        try:
            data = source.read(MAX_SCENARIO_BYTES + 1)
        except (OSError, ValueError) as exc:  # ValueError: e.g. a closed file
            raise ScenarioError(f"$: reading the scenario file failed: {_reason(exc)}.") from exc
        if not isinstance(data, (str, bytes, bytearray)):
            raise ScenarioError(f"$: reading the scenario file gave {type(data).__name__}, not text or bytes.")
        return parse_scenario_json(data)
    raise ScenarioError(
        f"$: a scenario source must be a path, a file, bytes, JSON text, a dict or 'builtin:NAME', "
        f"not {type(source).__name__}."
    )


def _reason(exc):
    return (getattr(exc, "strerror", None) or str(exc)).rstrip(".")


def _read_path(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SCENARIO_BYTES + 1)  # bounded: the path may be /dev/zero
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise ScenarioError(f"$: cannot read the scenario file {_show(os.fspath(path))}: {_reason(exc)}.") from exc
    return parse_scenario_json(data)


# --------------------------------------------------------------------------
# Validation


def _fail(path, message):
    raise ScenarioError(f"{path}: {message}")


_SHOWN = 80
_SCALARS = (type(None), bool, int, float, str)


def _probability_problem(probability):
    """Why a spread probability that does not match ``PROBABILITY_PATTERN`` is refused."""
    digits = re.fullmatch(r"([0-9]+)/([0-9]+)", probability) if isinstance(probability, str) else None
    if digits is None:
        return f'expected a string "N/D" with N and D decimal integers, got {_show(probability)}.'
    if not digits.group(2).strip("0"):
        return (
            f'the denominator D must be at least 1 (expected "N/D" with 0 <= N <= D <= 2^32), got {_show(probability)}.'
        )
    return f'expected "N/D" with N and D written without leading zeros, got {_show(probability)}.'


def _show(value):
    """A short description of any value for a message, that cannot fail.

    A dict source may hold anything: a foreign ``__repr__`` may raise, the
    repr of a deeply nested list recurses, ``str()`` of an integer past
    ``sys.get_int_max_str_digits()`` raises ValueError, and a huge value
    makes a huge message.  So only the types of JSON are shown, briefly.
    """
    kind = type(value)
    if kind is int:
        if -(10**_SHOWN) < value < 10**_SHOWN:
            return str(value)
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if kind is str:
        return repr(value) if len(value) <= _SHOWN else repr(value[:_SHOWN]) + "..."
    if value is None or kind is bool or kind is float or kind is _BadNumber:
        return repr(value)
    if kind in (list, tuple) and len(value) <= 4 and all(type(item) in _SCALARS for item in value):
        items = ", ".join(_show(item) for item in value)
        return f"[{items}]" if kind is list else f"({items}{',' if len(value) == 1 else ''})"
    if kind in (list, tuple, dict, set, frozenset):
        return f"a {kind.__name__} of {len(value)} items"
    return f"a {kind.__name__} object"


def _member(path, key):
    """The path of ``key`` in the object at ``path``; any hashable may be a key of a dict source."""
    if type(key) is str:
        return f"{path}.{key}" if len(key) <= _SHOWN else f"{path}.{key[:_SHOWN]}..."
    return f"{path}[{_show(key)}]"


def _type_name(value):
    if isinstance(value, _BadNumber):
        return value.kind
    return "null" if value is None else type(value).__name__


def _object(value, path, keys):
    if not isinstance(value, dict):
        _fail(path, f"expected an object with keys {list(keys)}, got {_type_name(value)}.")
    missing = [k for k in keys if k not in value]
    if missing:
        _fail(path, f"missing key {missing[0]!r}; expected exactly the keys {list(keys)}.")
    wanted = frozenset(keys)  # hashed lookups: a foreign key's __eq__ is never asked about a str
    extra = [k for k in value if k not in wanted]
    if extra:
        _fail(_member(path, extra[0]), f"unexpected key {_show(extra[0])}; expected exactly the keys {list(keys)}.")


def check_integer(value, where, low, high, fail, got_type, got_value):
    """``value`` when it is an int from ``low`` to ``high``, else ``fail(where, message)``.

    The message shows a value of another type with ``got_type(value)`` and an
    int out of range with ``got_value(value)`` (each caller keeps its wording).
    """
    if type(value) is not int:
        fail(where, f"expected an integer, got {got_type(value)}.")
    if not low <= value <= high:
        fail(where, f"expected an integer from {low} to {high}, got {got_value(value)}.")
    return value


def _typed(value):
    return f"{_type_name(value)} {_show(value)}"


def _integer(value, path, low, high):
    return check_integer(value, path, low, high, _fail, _typed, _show)


def _list(value, path):
    if not isinstance(value, list):
        _fail(path, f"expected a list, got {_type_name(value)}.")
    return value


def _identifier(value, path):
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        _fail(path, f"expected an ID matching [A-Za-z0-9][A-Za-z0-9._-]{{0,63}}, got {_show(value)}.")
    return value


def _cell(value, path, rows, cols):
    if not isinstance(value, list) or len(value) != 2:
        _fail(path, f"expected a cell [row, col], got {_show(value)}.")
    row = _integer(value[0], f"{path}[0]", -(2**63), 2**63)
    col = _integer(value[1], f"{path}[1]", -(2**63), 2**63)
    if not (0 <= row < rows and 0 <= col < cols):
        _fail(path, f"cell {[row, col]} is out of bounds of the {rows}x{cols} grid.")
    return row * cols + col


def _placed(value, path, id_key, names, rows, cols):
    """A non-empty list of ``{id_key: ID, "position": cell}``, IDs and cells distinct.

    Yields (index in the list, ID, flat cell) once each item is checked.
    """
    one, many = names
    items = _list(value, path)
    if not items:
        _fail(path, f"expected a non-empty list of {many}.")
    ids, cells = set(), set()
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        _object(item, where, (id_key, "position"))
        item_id = _identifier(item[id_key], f"{where}.{id_key}")
        if item_id in ids:
            _fail(f"{where}.{id_key}", f"{one} ID {item_id!r} is used twice.")
        index = _cell(item["position"], f"{where}.position", rows, cols)
        if index in cells:
            _fail(f"{where}.position", f"two {many} share the cell {_show(item['position'])}.")
        ids.add(item_id)
        cells.add(index)
        yield i, item_id, index


def validate_scenario(value):
    """Check every rule of simulator.md §2; return a private deep copy."""
    _object(value, "$", _TOP_KEYS)
    if not isinstance(value["schema_version"], str) or value["schema_version"] != SCHEMA_VERSION:
        _fail("$.schema_version", f"expected {SCHEMA_VERSION!r}, got {_show(value['schema_version'])}.")
    _identifier(value["scenario_id"], "$.scenario_id")

    grid = value["grid"]
    _object(grid, "$.grid", ("rows", "cols"))
    rows = _integer(grid["rows"], "$.grid.rows", 1, MAX_CELLS)
    cols = _integer(grid["cols"], "$.grid.cols", 1, MAX_CELLS)
    if rows * cols > MAX_CELLS:
        _fail("$.grid", f"rows x cols must be at most {MAX_CELLS:,}, got {rows * cols:,}.")

    walls = set()
    for i, cell in enumerate(_list(value["walls"], "$.walls")):
        index = _cell(cell, f"$.walls[{i}]", rows, cols)
        if index in walls:
            _fail(f"$.walls[{i}]", f"wall {_show(cell)} is listed twice.")
        walls.add(index)

    exit_cells = set()
    for i, exit_id, index in _placed(value["exits"], "$.exits", "exit_id", ("exit", "exits"), rows, cols):
        if index in walls:
            _fail(f"$.exits[{i}].position", f"exit {exit_id!r} is on a wall at {_show(value['exits'][i]['position'])}.")
        exit_cells.add(index)

    fire = value["fire"]
    _object(fire, "$.fire", ("ignitions", "spread_probability", "enter_fire"))
    ignitions = set()
    for i, cell in enumerate(_list(fire["ignitions"], "$.fire.ignitions")):
        index = _cell(cell, f"$.fire.ignitions[{i}]", rows, cols)
        if index in ignitions:
            _fail(f"$.fire.ignitions[{i}]", f"ignition {_show(cell)} is listed twice.")
        if index in walls:
            _fail(f"$.fire.ignitions[{i}]", f"ignition {_show(cell)} is on a wall.")
        ignitions.add(index)
    probability = fire["spread_probability"]
    match = PROBABILITY_PATTERN.fullmatch(probability) if isinstance(probability, str) else None
    if not match:
        _fail("$.fire.spread_probability", _probability_problem(probability))
    # No leading zeros, so more than 10 digits is above 2^32; and int() of a
    # long digit string raises ValueError past sys.get_int_max_str_digits().
    if (
        max(len(match.group(1)), len(match.group(2))) > 10
        or not int(match.group(1)) <= int(match.group(2)) <= MAX_DENOMINATOR
    ):
        _fail("$.fire.spread_probability", f"expected 0 <= N <= D <= 2^32, got {_show(probability)}.")
    if not isinstance(fire["enter_fire"], str) or fire["enter_fire"] not in ENTER_FIRE_MODES:
        _fail("$.fire.enter_fire", f"expected 'casualty' or 'block', got {_show(fire['enter_fire'])}.")

    for i, person_id, index in _placed(value["people"], "$.people", "person_id", ("person", "people"), rows, cols):
        where = f"$.people[{i}].position"
        cell = value["people"][i]["position"]
        if index in walls:
            _fail(where, f"person {person_id!r} starts on a wall at {_show(cell)}.")
        if index in exit_cells:
            _fail(where, f"person {person_id!r} starts on an exit at {_show(cell)}.")
        if index in ignitions:
            _fail(where, f"person {person_id!r} starts on an initial ignition at {_show(cell)}.")

    termination = value["termination"]
    _object(termination, "$.termination", ("max_steps",))
    _integer(termination["max_steps"], "$.termination.max_steps", 1, MAX_HORIZON)
    # Everything checked: the canonical round trip is a cheap exact deep copy.
    return canonical_copy(value)


def load_scenario(source):
    """Load and validate a scenario from any source output.md lists."""
    return validate_scenario(_read_source(source))


def scenario_hash(scenario) -> str:
    """``"sha256:" + sha256(canonical JSON of the scenario)`` (simulator.md §2)."""
    import hashlib  # at call time: a python policy compiles its scenario and never hashes it (``hash``)

    return "sha256:" + hashlib.sha256(canonical_json(load_scenario(scenario))).hexdigest()


class CompiledScenario:
    """A validated scenario with the indexes every component needs.

    Cells are integers ``row * cols + col``.  People are indexed by their
    rank in ID order, so "sorted by ID" is just index order everywhere.
    """

    def __init__(self, data):
        self.data = data
        self.scenario_id = data["scenario_id"]
        self._hash = None
        rows, cols = data["grid"]["rows"], data["grid"]["cols"]
        self.grid = Grid(rows, cols, [r * cols + c for r, c in data["walls"]])
        exits = sorted(data["exits"], key=lambda e: e["exit_id"])
        self.exit_ids = [e["exit_id"] for e in exits]
        self.exit_cells = [r * cols + c for r, c in (e["position"] for e in exits)]
        self.exit_at = dict(zip(self.exit_cells, self.exit_ids))
        people = sorted(data["people"], key=lambda p: p["person_id"])
        self.person_ids = [p["person_id"] for p in people]
        self.person_index = {pid: i for i, pid in enumerate(self.person_ids)}
        self.start_cells = [r * cols + c for r, c in (p["position"] for p in people)]
        fire = data["fire"]
        self.ignitions = sorted(r * cols + c for r, c in fire["ignitions"])
        numerator, denominator = fire["spread_probability"].split("/")
        self.spread_numerator = int(numerator)
        self.spread_denominator = int(denominator)
        self.enter_fire = fire["enter_fire"]
        self.max_steps = data["termination"]["max_steps"]
        self._static_exit_distances = None

    @property
    def hash(self):
        """``"sha256:" + sha256(canonical JSON of the scenario)`` (simulator.md §2), computed when first asked for:
        a policy compiles its scenario and never asks (a python policy's process then never loads the
        canonical encoder's fast path, nor hashlib, whose OpenSSL is a sixth of its imports)."""
        if self._hash is None:
            import hashlib

            self._hash = "sha256:" + hashlib.sha256(canonical_json(self.data)).hexdigest()
        return self._hash

    def static_exit_distances(self):
        """L_i per person (metrics.md §7): walls only, fire and people ignored; computed once."""
        if self._static_exit_distances is None:
            dist = self.grid.distances(self.exit_cells, self.grid.open)
            self._static_exit_distances = [None if dist[c] == UNREACHABLE else dist[c] for c in self.start_cells]
        return self._static_exit_distances


def compile_scenario(source) -> CompiledScenario:
    if isinstance(source, CompiledScenario):
        return source
    return CompiledScenario(load_scenario(source))
