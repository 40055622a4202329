"""Scenario loading and validation (simulator.md §2, output.md load_scenario)."""

import copy
import hashlib
import io
import json
import re
from pathlib import Path

import pytest

from ember import ScenarioError, Simulator, load_scenario, scenario_hash
from ember.scenario import builtin_names
from ember.sim.policies import make_policy

from helpers.scenarios import make_scenario, stay_all

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "src" / "ember" / "scenarios"


def base():
    #   0 1 2 3 4
    # 0 # . N . .
    # 1 . a . b .
    # 2 . . c . *
    # 3 # . . . S
    return make_scenario(
        4,
        5,
        people={"p0": (1, 1), "p1": (1, 3), "p2": (2, 2)},
        exits={"north": (0, 2), "south": (3, 4)},
        walls=[(0, 0), (3, 0)],
        ignitions=[(2, 4)],
        p="1/3",
        max_steps=20,
        scenario_id="base",
    )


def spec_canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def expect_error(source, path, *, inside=False):
    """load_scenario raises ScenarioError whose message names exactly ``path``
    (or, with ``inside``, ``path`` or a path inside it)."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(source)
    message = str(info.value)
    pattern = re.escape(path) + (r"(?![\w])" if inside else r"(?![\w.\[])")
    assert re.search(pattern, message), f"{path!r} not named in {message!r}"
    assert isinstance(info.value, ValueError)
    return message


# ---------------------------------------------------------------------------
# Sources.


def test_base_is_valid_and_returned_equal():
    assert load_scenario(base()) == base()


def test_every_source_kind(tmp_path):
    sc = base()
    text = json.dumps(sc, indent=2)
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    sources = [
        sc,
        text,
        "  \n" + text,
        text.encode(),
        bytearray(text.encode()),
        str(path),
        path,
        io.BytesIO(text.encode()),
        io.StringIO(text),
    ]
    for source in sources:
        assert load_scenario(source) == sc, type(source)
    with open(path, "rb") as handle:
        assert load_scenario(handle) == sc
    with open(path, encoding="utf-8") as handle:
        assert load_scenario(handle) == sc


def test_builtin_names_are_the_shipped_files():
    shipped = [p.stem for p in SCENARIO_DIR.glob("*.json")]
    shipped += [f"{p.parent.name}/{p.stem}" for p in SCENARIO_DIR.glob("*/*.json")]  # suites, e.g. ember-v1/NAME
    assert builtin_names() == sorted(shipped)
    assert len(builtin_names()) >= 1


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIO_DIR.glob("*.json")))
def test_builtin_loads_and_runs(name):
    sc = load_scenario(f"builtin:{name}")
    assert sc == load_scenario(SCENARIO_DIR / f"{name}.json")
    assert scenario_hash(f"builtin:{name}") == "sha256:" + hashlib.sha256(spec_canonical(sc)).hexdigest()
    for policy in ("greedy", "random"):
        sim = Simulator(sc, 7)
        act = make_policy(policy, sc, 7)
        for t in range(1, 4):
            if sim.terminated:
                break
            assert sim.step(act(sim.observe()))["step"] == t


def test_unknown_builtin_and_bad_sources(tmp_path):
    expect_error("builtin:no-such-scenario", "$")
    expect_error(str(tmp_path / "missing.json"), "$")
    expect_error(tmp_path / "missing.json", "$")
    expect_error(42, "$")
    expect_error(None, "$")
    expect_error(["not", "a", "dict"], "$")


def test_load_returns_a_private_copy():
    sc = base()
    loaded = load_scenario(sc)
    sc["people"][0]["position"][0] = 3
    sc["walls"].append([1, 0])
    sc["fire"]["spread_probability"] = "1/1"
    sc["grid"]["rows"] = 9
    assert loaded == base()
    loaded["people"].clear()
    loaded["exits"][0]["exit_id"] = "changed"
    assert load_scenario(base()) == base()


def test_simulator_does_not_see_later_mutation_of_its_input():
    sc = base()
    sim = Simulator(sc, 3)
    sc["people"][0]["position"] = [3, 3]
    sc["fire"]["spread_probability"] = "1/1"
    sc["termination"]["max_steps"] = 1
    fresh = Simulator(base(), 3)
    for _ in range(4):
        assert sim.step(stay_all(sim.observe())) == fresh.step(stay_all(fresh.observe()))


def test_simulator_rejects_invalid_scenario():
    sc = base()
    sc["people"][1]["position"] = [0, 0]
    with pytest.raises(ScenarioError, match=re.escape("$.people[1].position")):
        Simulator(sc, 0)


# ---------------------------------------------------------------------------
# Content hash.


def test_scenario_hash_is_sha256_of_canonical_json():
    sc = base()
    h = scenario_hash(sc)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", h)
    assert h == "sha256:" + hashlib.sha256(spec_canonical(sc)).hexdigest()
    # Formatting and key order do not matter; the value does.
    assert scenario_hash(json.dumps(sc, indent=3)) == h
    assert scenario_hash(json.loads(json.dumps(sc), object_pairs_hook=lambda p: dict(reversed(p)))) == h
    assert Simulator(sc, 0).header["scenario_hash"] == h
    other = base()
    other["people"].reverse()  # canonical JSON keeps list order
    assert scenario_hash(other) != h
    assert scenario_hash(other) == "sha256:" + hashlib.sha256(spec_canonical(other)).hexdigest()


def test_scenario_hash_rejects_invalid():
    sc = base()
    sc["termination"]["max_steps"] = 0
    with pytest.raises(ScenarioError):
        scenario_hash(sc)


# ---------------------------------------------------------------------------
# Negative tests, one rule at a time.


def mutated(edit):
    sc = base()
    edit(sc)
    return sc


def setter(*keys_and_value):
    *keys, value = keys_and_value

    def edit(sc):
        target = sc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = copy.deepcopy(value)

    return edit


@pytest.mark.parametrize(
    "container, key",
    [
        ("$", "fire"),
        ("$", "schema_version"),
        ("$.grid", "cols"),
        ("$.exits[1]", "position"),
        ("$.people[0]", "person_id"),
        ("$.fire", "enter_fire"),
        ("$.fire", "ignitions"),
        ("$.termination", "max_steps"),
    ],
)
def test_missing_key(container, key):
    sc = base()
    target = sc
    for part in re.findall(r"\.(\w+)|\[(\d+)\]", container):
        target = target[part[0]] if part[0] else target[int(part[1])]
    del target[key]
    with pytest.raises(ScenarioError) as info:
        load_scenario(sc)
    message = str(info.value)
    # Either the missing key's own path, or its object's path naming the key.
    full = f"{container}.{key}"
    assert full in message or (re.search(re.escape(container) + r"(?![\w.\[])", message) and repr(key) in message), (
        message
    )


@pytest.mark.parametrize(
    "edit, path",
    [
        (setter("extra", 1), "$.extra"),
        (setter("grid", "depth", 1), "$.grid.depth"),
        (lambda sc: sc["people"][2].update(name="x"), "$.people[2].name"),
        (lambda sc: sc["exits"][0].update(label="x"), "$.exits[0].label"),
        (setter("fire", "seed", 0), "$.fire.seed"),
        (setter("termination", "max_time", 5), "$.termination.max_time"),
    ],
    ids=["top", "grid", "person", "exit", "fire", "termination"],
)
def test_extra_key(edit, path):
    expect_error(mutated(edit), path)


WRONG_TYPES = [
    (setter("grid", [4, 5]), "$.grid"),
    (setter("grid", "rows", "4"), "$.grid.rows"),
    (setter("grid", "cols", None), "$.grid.cols"),
    (setter("walls", {}), "$.walls"),
    (setter("walls", None), "$.walls"),
    (lambda sc: sc["walls"].__setitem__(1, "3,0"), "$.walls[1]"),
    (lambda sc: sc["walls"].__setitem__(1, [3]), "$.walls[1]"),
    (lambda sc: sc["walls"].__setitem__(1, [3, 0, 0]), "$.walls[1]"),
    (lambda sc: sc["walls"].__setitem__(1, {"row": 3, "col": 0}), "$.walls[1]"),
    (lambda sc: sc["walls"].__setitem__(1, [3, "0"]), "$.walls[1][1]"),
    (setter("exits", {"north": [0, 2]}), "$.exits"),
    (lambda sc: sc["exits"].__setitem__(0, ["north", [0, 2]]), "$.exits[0]"),
    (lambda sc: sc["exits"][0].__setitem__("exit_id", None), "$.exits[0].exit_id"),
    (lambda sc: sc["people"][1].__setitem__("position", "1,3"), "$.people[1].position"),
    (lambda sc: sc["people"][1].__setitem__("person_id", 7), "$.people[1].person_id"),
    (setter("people", "p0"), "$.people"),
    (setter("scenario_id", 5), "$.scenario_id"),
    (setter("schema_version", 1), "$.schema_version"),
    (setter("schema_version", "1.1"), "$.schema_version"),
    (setter("schema_version", "1.0 "), "$.schema_version"),
    (setter("fire", None), "$.fire"),
    (setter("fire", "ignitions", "2,4"), "$.fire.ignitions"),
    (setter("fire", "spread_probability", None), "$.fire.spread_probability"),
    (setter("fire", "enter_fire", None), "$.fire.enter_fire"),
    (setter("termination", [20]), "$.termination"),
    (setter("termination", "max_steps", "20"), "$.termination.max_steps"),
]


@pytest.mark.parametrize("edit, path", WRONG_TYPES, ids=[p for _, p in WRONG_TYPES])
def test_wrong_type(edit, path):
    expect_error(mutated(edit), path)


BOOLEANS = [
    (setter("grid", "rows", True), "$.grid.rows"),
    (setter("grid", "cols", False), "$.grid.cols"),
    (setter("termination", "max_steps", True), "$.termination.max_steps"),
    (lambda sc: sc["people"][1].__setitem__("position", [True, 3]), "$.people[1].position[0]"),
    (lambda sc: sc["walls"].__setitem__(0, [0, False]), "$.walls[0][1]"),
    (setter("fire", "ignitions", [[True, True]]), "$.fire.ignitions[0][0]"),
    (lambda sc: sc["exits"][1].__setitem__("position", [True, 1]), "$.exits[1].position[0]"),
]


@pytest.mark.parametrize("edit, path", BOOLEANS, ids=[p for _, p in BOOLEANS])
def test_booleans_are_not_integers(edit, path):
    expect_error(mutated(edit), path)
    # The same as JSON text.
    expect_error(json.dumps(mutated(edit)), path)


NON_INTEGERS = [
    (setter("grid", "rows", 4.0), "$.grid.rows"),
    (setter("termination", "max_steps", 20.5), "$.termination.max_steps"),
    (lambda sc: sc["people"][2].__setitem__("position", [2.0, 2]), "$.people[2].position[0]"),
    (lambda sc: sc["walls"].__setitem__(1, [3, 0.0]), "$.walls[1][1]"),
    (setter("fire", "spread_probability", 0.5), "$.fire.spread_probability"),
]


@pytest.mark.parametrize("edit, path", NON_INTEGERS, ids=[p for _, p in NON_INTEGERS])
def test_non_integer_numbers(edit, path):
    expect_error(mutated(edit), path)
    expect_error(json.dumps(mutated(edit)), path)
    expect_error(json.dumps(mutated(edit)).encode(), path)


def base_text():
    return json.dumps(base())


@pytest.mark.parametrize(
    "old, new, path",
    [
        ('"rows": 4', '"rows": 4e0', "$.grid.rows"),
        ('"rows": 4', '"rows": 4E+0', "$.grid.rows"),
        ('"max_steps": 20', '"max_steps": 2.0e1', "$.termination.max_steps"),
        ('"max_steps": 20', '"max_steps": NaN', "$.termination.max_steps"),
        ('"max_steps": 20', '"max_steps": Infinity', "$.termination.max_steps"),
        ('"max_steps": 20', '"max_steps": -Infinity', "$.termination.max_steps"),
        ('"max_steps": 20', '"max_steps": ' + "9" * 5000, "$.termination.max_steps"),
        ('"max_steps": 20', '"max_steps": -0.0', "$.termination.max_steps"),
        ('"cols": 5', '"cols": 5.000', "$.grid.cols"),
    ],
    ids=[
        "exponent",
        "exponent-sign",
        "float-exponent",
        "nan",
        "infinity",
        "minus-infinity",
        "5000-digits",
        "minus-zero-float",
        "trailing-zeros",
    ],
)
def test_non_integer_numbers_in_json_text(old, new, path):
    text = base_text()
    assert old in text
    expect_error(text.replace(old, new, 1), path)
    expect_error(text.replace(old, new, 1).encode(), path)


@pytest.mark.parametrize(
    "old, new, path",
    [
        ('"rows": 4', '"rows": 4, "rows": 4', "$.grid.rows"),
        ('"walls": ', '"walls": [], "walls": ', "$.walls"),
        ('"person_id": "p1"', '"person_id": "p1", "person_id": "p1"', "$.people[1].person_id"),
        ('"enter_fire": "casualty"', '"enter_fire": "casualty", "enter_fire": "block"', "$.fire.enter_fire"),
    ],
    ids=["grid-rows", "top-level", "person", "fire"],
)
def test_duplicate_keys(old, new, path):
    text = base_text()
    assert old in text
    expect_error(text.replace(old, new, 1), path)
    expect_error(text.replace(old, new, 1).encode(), path)


def test_byte_order_mark(tmp_path):
    text = base_text()
    expect_error(b"\xef\xbb\xbf" + text.encode(), "$")
    message = expect_error("\ufeff" + text, "$")
    assert "byte-order mark" in message.lower() or "bom" in message.lower(), message
    expect_error(io.BytesIO(b"\xef\xbb\xbf" + text.encode()), "$")
    expect_error(io.StringIO("\ufeff" + text), "$")
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    expect_error(path, "$")
    expect_error(str(path), "$")


@pytest.mark.parametrize(
    "data",
    [b'{"schema_version":', b"", b"[]", b"null", b'{"a": 1} x', b'{"\xff": 1}', b"\xfe\xff\x00{"],
    ids=["truncated", "empty", "array", "null", "trailing-data", "not-utf8", "utf16-bom"],
)
def test_not_a_json_object(data):
    expect_error(data, "$")


@pytest.mark.parametrize(
    "edit, path",
    [
        (setter("grid", "rows", 0), "$.grid.rows"),
        (setter("grid", "cols", 0), "$.grid.cols"),
        (setter("grid", "rows", -4), "$.grid.rows"),
        (setter("grid", {"rows": 4097, "cols": 4096}), "$.grid"),
        (setter("grid", {"rows": 97 * 257, "cols": 673}), "$.grid"),  # 2^24 + 1 cells
        (setter("grid", {"rows": 16_777_217, "cols": 1}), "$.grid.rows"),
        (setter("grid", {"rows": 1, "cols": 2**40}), "$.grid.cols"),
    ],
    ids=["rows-0", "cols-0", "rows-negative", "area-too-large", "area-one-too-many", "rows-too-large", "cols-huge"],
)
def test_grid_size(edit, path):
    expect_error(mutated(edit), path)


@pytest.mark.parametrize("rows, cols", [(1, 16_777_216), (4096, 4096), (16_777_216, 1)])
def test_largest_grid_is_accepted(rows, cols):
    sc = make_scenario(rows, cols, people={"a": (0, 0)}, exits={"x": (rows - 1, cols - 1)})
    assert load_scenario(sc)["grid"] == {"rows": rows, "cols": cols}


@pytest.mark.parametrize(
    "edit, path",
    [
        (lambda sc: sc["walls"].__setitem__(1, [4, 0]), "$.walls[1]"),
        (lambda sc: sc["walls"].__setitem__(1, [0, -1]), "$.walls[1]"),
        (lambda sc: sc["exits"][0].__setitem__("position", [0, 5]), "$.exits[0].position"),
        (lambda sc: sc["exits"][1].__setitem__("position", [-1, 4]), "$.exits[1].position"),
        (lambda sc: sc["people"][0].__setitem__("position", [-1, 1]), "$.people[0].position"),
        (lambda sc: sc["people"][2].__setitem__("position", [2, 5]), "$.people[2].position"),
        (setter("fire", "ignitions", [[2, 4], [4, 4]]), "$.fire.ignitions[1]"),
        (setter("fire", "ignitions", [[2**70, 0]]), "$.fire.ignitions[0]"),
    ],
    ids=["wall-row", "wall-col", "exit-col", "exit-row", "person-row", "person-col", "ignition", "ignition-huge"],
)
def test_cells_out_of_bounds(edit, path):
    # The cell, or the offending coordinate inside it, is named.
    expect_error(mutated(edit), path, inside=True)


CELL_RULES = [
    (lambda sc: sc["walls"].append([0, 0]), "$.walls[2]", "duplicate-wall"),
    (setter("exits", []), "$.exits", "empty-exits"),
    (lambda sc: sc["exits"][1].__setitem__("exit_id", "north"), "$.exits[1].exit_id", "duplicate-exit-id"),
    (lambda sc: sc["exits"][1].__setitem__("position", [0, 2]), "$.exits[1].position", "duplicate-exit-position"),
    (lambda sc: sc["exits"][0].__setitem__("position", [0, 0]), "$.exits[0].position", "exit-on-wall"),
    (setter("people", []), "$.people", "empty-people"),
    (lambda sc: sc["people"][2].__setitem__("person_id", "p0"), "$.people[2].person_id", "duplicate-person-id"),
    (lambda sc: sc["people"][2].__setitem__("position", [1, 1]), "$.people[2].position", "duplicate-person-position"),
    (lambda sc: sc["people"][1].__setitem__("position", [3, 0]), "$.people[1].position", "person-on-wall"),
    (lambda sc: sc["people"][1].__setitem__("position", [3, 4]), "$.people[1].position", "person-on-exit"),
    (lambda sc: sc["people"][1].__setitem__("position", [2, 4]), "$.people[1].position", "person-on-ignition"),
    (setter("fire", "ignitions", [[2, 4], [0, 0]]), "$.fire.ignitions[1]", "ignition-on-wall"),
    (setter("fire", "ignitions", [[2, 4], [1, 4], [2, 4]]), "$.fire.ignitions[2]", "duplicate-ignition"),
]


@pytest.mark.parametrize("edit, path", [c[:2] for c in CELL_RULES], ids=[c[2] for c in CELL_RULES])
def test_cell_rules(edit, path):
    expect_error(mutated(edit), path)


def test_exit_may_burn_and_walls_may_be_empty():
    sc = base()
    sc["fire"]["ignitions"].append([0, 2])
    sc["walls"] = []
    assert load_scenario(sc) == sc
    sc["fire"]["ignitions"] = []
    assert load_scenario(sc) == sc


BAD_IDS = [
    "a" * 65,
    ".a",
    "-a",
    "_a",
    "",
    " a",
    "a ",
    "a b",
    "a/b",
    "a:b",
    "a\n",
    "é",
    "aé",
    "ａ",
    "١",
    "a\u200b",
    "ß",
    5,
    None,
]
GOOD_IDS = ["a" * 64, "Z" * 64, "0", "A", "a.", "a..b", "a-_.9", "9" + "-" * 63]
ID_PLACES = [
    ("$.scenario_id", lambda sc, v: sc.__setitem__("scenario_id", v)),
    ("$.people[2].person_id", lambda sc, v: sc["people"][2].__setitem__("person_id", v)),
    ("$.exits[1].exit_id", lambda sc, v: sc["exits"][1].__setitem__("exit_id", v)),
]


@pytest.mark.parametrize("place, edit", ID_PLACES, ids=[p for p, _ in ID_PLACES])
@pytest.mark.parametrize("value", BAD_IDS, ids=[repr(v) if len(repr(v)) < 12 else f"len{len(v)}" for v in BAD_IDS])
def test_bad_ids(place, edit, value):
    sc = base()
    edit(sc, value)
    expect_error(sc, place)


@pytest.mark.parametrize("place, edit", ID_PLACES, ids=[p for p, _ in ID_PLACES])
def test_good_ids(place, edit):
    for value in GOOD_IDS:
        sc = base()
        edit(sc, value)
        assert load_scenario(sc) == sc


BAD_P = [
    "1/0",
    "01/2",
    "1/02",
    "3/2",
    "1/4294967297",
    "4294967297/4294967297",
    " 1/2",
    "1/2 ",
    "1/2\n",
    "-1/2",
    "+1/2",
    "1 /2",
    "1/2/3",
    "",
    "1",
    "/2",
    "1/",
    "½",
    "١/٢",
    "0x1/2",
    "0.5",
    "1/2.0",
    "0/0",
    0.5,
    1,
    ["1", "2"],
]


@pytest.mark.parametrize("value", BAD_P, ids=[repr(v) for v in BAD_P])
def test_bad_spread_probability(value):
    expect_error(mutated(setter("fire", "spread_probability", value)), "$.fire.spread_probability")


@pytest.mark.parametrize("value", ["0/1", "1/1", "0/4294967296", "1/4294967296", "4294967296/4294967296", "12/13"])
def test_good_spread_probability(value):
    assert load_scenario(mutated(setter("fire", "spread_probability", value)))["fire"]["spread_probability"] == value


@pytest.mark.parametrize("value", ["Block", "CASUALTY", "kill", "", " block", True, 1])
def test_bad_enter_fire(value):
    expect_error(mutated(setter("fire", "enter_fire", value)), "$.fire.enter_fire")


@pytest.mark.parametrize("value", [0, -1, 2**31, 2**63])
def test_bad_max_steps(value):
    expect_error(mutated(setter("termination", "max_steps", value)), "$.termination.max_steps")


@pytest.mark.parametrize("value", [1, 2**31 - 1])
def test_good_max_steps(value):
    assert load_scenario(mutated(setter("termination", "max_steps", value)))["termination"]["max_steps"] == value


def test_first_error_in_text_names_its_path():
    # A float deep inside people, in JSON text: the path is exact.
    text = base_text().replace('"position": [2, 2]', '"position": [2, 2.5]')
    expect_error(text, "$.people[2].position[1]")
