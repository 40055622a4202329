"""Scenario fuzzing (ember.scenario): any scenario either validates or raises a
``ScenarioError`` whose message starts with a JSON path; one named regression test per
class of defect found.
"""

import contextlib
import copy
import io
import json
import os
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json

from helpers.hostile_input import (
    JSONISH,
    LIMITED,
    LIMITED_RECORD,
    SMALL,
    all_places,
    scenarios,
    set_at,
)
from helpers.strict import no_hang

# --- scenario fuzzing ------------------------------------------------------------


class Custom:
    pass


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


class BadEq:
    def __eq__(self, other):
        raise RuntimeError("no eq")

    __hash__ = object.__hash__


class Str(str):
    pass


def _deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth):
    value = {}
    for _ in range(depth):
        value = {"grid": value}
    return value


def _self_reference():
    value = []
    value.append(value)
    return value


WEIRD = {
    "none": lambda: None,
    "true": lambda: True,
    "false": lambda: False,
    "zero": lambda: 0,
    "minus": lambda: -1,
    "2^64": lambda: 2**64,
    "2^31": lambda: 2**31,
    "2^32+1": lambda: 2**32 + 1,
    "huge": lambda: 10**5000,
    "-huge": lambda: -(10**5000),
    "float": lambda: 1.5,
    "4.0": lambda: 4.0,
    "nan": lambda: float("nan"),
    "inf": lambda: float("inf"),
    "str": lambda: "x",
    "empty": lambda: "",
    "long": lambda: "x" * 10**6,
    "1.0": lambda: "1.0",
    "p-digits": lambda: "1" + "0" * 5000 + "/1",
    "p-den": lambda: "1/" + "9" * 5000,
    "p-big": lambda: "1/4294967297",
    "block": lambda: "block",
    "list": lambda: [],
    "list3": lambda: [1, 2, 3],
    "cell": lambda: [0, 0],
    "cell-out": lambda: [99, 99],
    "cell-bool": lambda: [True, False],
    "cell-huge": lambda: [10**5000, 0],
    "cell-neg": lambda: [-(2**70), 0],
    "dict": lambda: {},
    "tuple": lambda: (0, 0),
    "set": lambda: {1, 2},
    "frozenset": lambda: frozenset(),
    "bytes": lambda: b"x",
    "complex": lambda: 1j,
    "decimal": lambda: __import__("decimal").Decimal("1"),
    "fraction": lambda: __import__("fractions").Fraction(1, 2),
    "custom": Custom,
    "bad-repr": BadRepr,
    "bad-eq": BadEq,
    "str-sub": lambda: Str("1.0"),
    "deep-list": lambda: _deep_list(100_000),
    "deep-dict": lambda: _deep_dict(100_000),
    "self-ref": _self_reference,
    "class": lambda: int,
    "function": lambda: len,
}
KEYS = {
    "extra": lambda: "extra",
    "one": lambda: 1,
    "none": lambda: None,
    "tuple": lambda: (1, 2),
    "huge": lambda: 10**5000,
    "custom": Custom,
    "bad-eq": BadEq,
    "bad-repr": BadRepr,
    "long": lambda: "k" * 10**5,
}


def valid_scenario_or_path_error(source, again=None):
    """load_scenario either validates ``source`` or raises ScenarioError with a ``$`` path.

    ``again()`` gives the source afresh (a file is read once) for scenario_hash.
    """
    try:
        scenario = ember.load_scenario(source)
    except ember.ScenarioError as exc:
        assert str(exc).startswith("$"), str(exc)
        assert len(str(exc)) < 10_000
        with pytest.raises(ember.ScenarioError):
            ember.scenario_hash(again() if again else source)
        return None, exc
    assert ember.scenario_hash(scenario) == ember.scenario_hash(again() if again else source)
    return scenario, None


def refused_with_cause(make, error):
    """episode_metrics (and MetricsStream) refuse an invalid scenario with the ScenarioError as cause.

    ``make()`` gives the scenario source (afresh: a file is read once).
    """
    with pytest.raises(ember.MetricsInputError) as info:
        ember.episode_metrics(make(), LIMITED_RECORD)
    assert isinstance(info.value.__cause__, ember.ScenarioError)
    assert str(info.value.__cause__) == str(error)
    with pytest.raises(ember.MetricsInputError) as info:
        ember.MetricsStream(make())
    assert isinstance(info.value.__cause__, ember.ScenarioError)


def structural_edit(scenario, data):
    kind = data.draw(st.sampled_from(["replace", "delete", "add_key", "wrap", "source"]))
    if kind == "source":
        return WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    places = [path for path, _ in all_places(scenario, depth=4)]
    path = data.draw(st.sampled_from(places))
    parent = scenario
    for key in path[:-1]:
        parent = parent[key]
    target = parent[path[-1]] if path else scenario
    if kind == "replace" and path:
        parent[path[-1]] = WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    elif kind == "delete" and path:
        del parent[path[-1]]
    elif kind == "add_key" and isinstance(target, dict):
        target[KEYS[data.draw(st.sampled_from(sorted(KEYS)))]()] = WEIRD[data.draw(st.sampled_from(sorted(WEIRD)))]()
    elif kind == "wrap" and path:
        parent[path[-1]] = data.draw(st.sampled_from([lambda v: [v], lambda v: {"x": v}, lambda v: (v,)]))(target)
    return scenario


@SMALL
@given(scenarios(), st.data())
def test_scenario_structural_edits_validate_or_name_a_path(scenario, data):
    for _ in range(data.draw(st.integers(1, 3))):
        scenario = structural_edit(scenario, data)
        if not isinstance(scenario, dict):
            break
    validated, error = valid_scenario_or_path_error(scenario)
    if error is not None:
        refused_with_cause(lambda: scenario, error)
        with pytest.raises(ember.ScenarioError):
            ember.Simulator(scenario, 0)
    else:
        # Valid, yet maybe another scenario: measured or refused, never anything else.
        with contextlib.suppress(ember.MetricsInputError):
            ember.episode_metrics(scenario, LIMITED_RECORD)


@SMALL
@given(scenarios(), st.data())
def test_scenario_text_mutations_validate_or_name_a_path(scenario, data):
    text = canonical_json(scenario)
    if data.draw(st.booleans()):
        text = json.dumps(scenario, indent=2).encode()
    kind = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate", "duplicate", "nest", "number"]))
    at = data.draw(st.integers(0, len(text)))
    if kind == "flip" and at < len(text):
        text = text[:at] + bytes([text[at] ^ data.draw(st.integers(1, 255))]) + text[at + 1 :]
    elif kind == "delete":
        text = text[:at] + text[at + data.draw(st.integers(1, 10)) :]
    elif kind == "insert":
        text = text[:at] + bytes(data.draw(st.lists(st.sampled_from(JSONISH), min_size=1, max_size=6))) + text[at:]
    elif kind == "truncate":
        text = text[:at]
    elif kind == "duplicate":
        key = data.draw(st.sampled_from([b'"grid":{"rows":1,"cols":1},', b'"walls":[],', b'"scenario_id":"s",']))
        text = b"{" + key + text[1:]
    elif kind == "nest":
        depth = data.draw(st.sampled_from([10, 1000, 100_000]))
        text = text[:at] + b"[" * depth + b"0" + b"]" * depth + text[at:]
    elif kind == "number":
        text = (
            text[:at]
            + data.draw(st.sampled_from([b"1e999", b"NaN", b"-Infinity", b"9" * 5000, b"1.0", b"-0", b"01"]))
            + text[at:]
        )
    for make in (lambda: text, lambda: text.decode("utf-8", "surrogateescape"), lambda: io.BytesIO(text)):
        scenario_or_none, error = valid_scenario_or_path_error(make(), make)
        if error is not None:
            refused_with_cause(make, error)


def test_scenario_sources_of_every_kind_fail_with_a_path(tmp_path):
    base = copy.deepcopy(LIMITED)
    cases = [WEIRD[name]() for name in sorted(WEIRD)] + [
        "abc\x00def",
        str(tmp_path),
        str(tmp_path / "missing" / "x.json"),
        "x" * 100_000,
        b"\xef\xbb\xbf{}",
        b"\xff\xfe",
        "\ud800",
        tmp_path,
        io.StringIO("{"),
        io.BytesIO(b""),
    ]
    closed = io.BytesIO(b"{}")
    closed.close()
    cases.append(closed)
    for source in cases:
        scenario, error = valid_scenario_or_path_error(
            source, lambda source=source: source if not hasattr(source, "read") else io.BytesIO(b"")
        )
        assert scenario is None
    for _name, make in sorted(KEYS.items()):
        source = copy.deepcopy(base)
        source[make()] = 1
        assert valid_scenario_or_path_error(source)[1] is not None


def test_regression_scenario_huge_integers_raised_value_error():
    # Messages formatted the integer: str() of more than 4,300 digits raises
    # ValueError; and int() of a long "N/D" did the same.
    for path, value in (
        (("grid", "rows"), 10**5000),
        (("walls",), [[10**5000, 0]]),
        (("termination", "max_steps"), -(10**5000)),
        (("fire", "spread_probability"), "1" + "0" * 5000 + "/1"),
        (("fire", "spread_probability"), "1/" + "9" * 5000),
    ):
        source = copy.deepcopy(LIMITED)
        set_at(source, path, value)
        with pytest.raises(ember.ScenarioError, match=r"^\$\." + path[0]):
            ember.load_scenario(source)
        text = json.dumps(source).encode() if type(value) is str else None
        if text:
            with pytest.raises(ember.ScenarioError, match=r"^\$\.fire\.spread_probability"):
                ember.load_scenario(text)
    source = copy.deepcopy(LIMITED)
    source[10**5000] = 1
    with pytest.raises(ember.ScenarioError, match=r"^\$\[an integer of about 5001 digits\]: unexpected key"):
        ember.load_scenario(source)


def test_regression_scenario_messages_used_foreign_repr():
    # Messages used repr() of whatever a dict source held: a raising
    # __repr__ escaped, a deeply nested list raised RecursionError, and a
    # foreign key's __eq__ was called against every expected key.
    for value in (BadRepr(), _deep_list(100_000), _deep_dict(100_000), _self_reference(), [BadRepr(), 0]):
        for path in (
            ("scenario_id",),
            ("walls",),
            ("walls", 0),
            ("grid", "rows"),
            ("fire", "enter_fire"),
            ("schema_version",),
        ):
            source = copy.deepcopy(LIMITED)
            if path == ("walls", 0):
                source["walls"] = [value]
            else:
                set_at(source, path, value)
            with pytest.raises(ember.ScenarioError, match=r"^\$\."):
                ember.load_scenario(source)
    for key in (BadEq(), BadRepr()):
        source = copy.deepcopy(LIMITED)
        source[key] = 1
        with pytest.raises(ember.ScenarioError, match=r"^\$\[a Bad\w+ object\]: unexpected key"):
            ember.load_scenario(source)


def test_regression_scenario_paths_were_quadratic_in_nesting():
    # Parsing built every value's path string eagerly and every open frame
    # held its own: 500 nested objects with 4,000-character keys (2 MB of
    # JSON) took 500 MB and seconds before the first check.
    depth, key = 500, 4000
    text = "".join('{"' + "k" * (key - 1) + str(d % 10) + '":' for d in range(depth)) + "0" + "}" * depth
    tracemalloc.start()
    try:
        with no_hang(), pytest.raises(ember.ScenarioError, match=r"^\$: missing key"):
            ember.load_scenario(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20
    duplicate = '{"a":' * 50 + '{"k":1,"k":2}' + "}" * 50
    with pytest.raises(ember.ScenarioError, match=r"^\$" + r"\.a" * 50 + r"\.k: duplicate key 'k'"):
        ember.load_scenario(duplicate)


def test_regression_scenario_read_was_unbounded(monkeypatch):
    # A scenario file was read whole: /dev/zero (or any endless stream) held
    # the process until memory ran out.
    import ember.scenario

    monkeypatch.setattr(ember.scenario, "MAX_SCENARIO_BYTES", 1 << 20, raising=False)

    class Endless:
        def read(self, size=-1):
            assert size >= 0, "read everything of an endless stream"
            return b" " * size

    with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer than 1,048,576 bytes"):
        ember.load_scenario(Endless())
    if os.path.exists("/dev/zero"):
        with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer"):
            ember.load_scenario("/dev/zero")
    with pytest.raises(ember.ScenarioError, match=r"^\$: the scenario JSON text is longer"):
        ember.load_scenario(b" " * ((1 << 20) + 1))
