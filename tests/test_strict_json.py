"""Strict JSON's one home (ember.strict_json): the duplicate-key check every reader parses with.

The results readers, the agent and the scenario reader all refuse a
repeated key through ``object_without_duplicates``; the scenario reader
asks where it is (``loads_without_duplicates(where=True)``).
"""

import json

import pytest

import ember
from ember.strict_json import DuplicateKey, loads_without_duplicates, strict_json


def test_a_text_without_a_repeated_key_is_parsed_as_json_loads_parses_it():
    text = '{"a": [1, {"b": 2.5, "c": null}], "d": {"e": "f"}}'
    assert loads_without_duplicates(text) == json.loads(text)
    assert loads_without_duplicates(text, where=True) == json.loads(text)


@pytest.mark.parametrize(
    "text, key, path",
    [
        ('{"k": 1, "k": 2}', "k", ("k",)),
        ('{"a": [0, {"k": 1, "k": 2}]}', "k", ("a", 1, "k")),
        # Document order: the first key's value is walked before the next key is looked at, so the repeated
        # "a" on the top is found before the inner object that closes first.
        ('{"a": 1, "a": 2, "b": {"x": 1, "x": 2}}', "a", ("a",)),
        ('{"a": {"x": 1, "x": 2}, "a": 3}', "x", ("a", "x")),
        ('[{"k": 1}, {"j": 1, "j": 2}]', "j", (1, "j")),
    ],
)
def test_the_first_repeated_key_is_named_by_its_path(text, key, path):
    with pytest.raises(DuplicateKey) as found:
        loads_without_duplicates(text, where=True)
    assert (found.value.key, found.value.path) == (key, path)
    assert str(found.value) == f"duplicate key {key!r}"
    with pytest.raises(DuplicateKey) as unasked:
        loads_without_duplicates(text)
    assert unasked.value.path is None


def test_a_text_broken_after_its_repeated_key_is_refused_as_not_json_when_the_path_is_asked():
    text = '{"k": 1, "k": 2} trailing'
    with pytest.raises(DuplicateKey):
        loads_without_duplicates(text)
    with pytest.raises(json.JSONDecodeError, match="Extra data"):
        loads_without_duplicates(text, where=True)


def test_the_hooks_are_json_loads_hooks():
    assert loads_without_duplicates('{"n": 1.5, "m": 2}', parse_float=str, parse_int=str) == {"n": "1.5", "m": "2"}


@pytest.mark.parametrize(
    "data, reason",
    [
        (b'{"k": 1, "k": 2}', "duplicate key 'k'"),
        (b'{"n": NaN}', "NaN is not JSON"),
        (b'{"n": 1e999}', "number 1e999 is out of range"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_strict_json_refuses_a_repeated_key_nan_infinity_and_deep_nesting_with_one_reason(data, reason):
    with pytest.raises(ValueError) as refused:
        strict_json(data)
    assert str(refused.value) == reason


def test_the_scenario_reader_names_a_repeated_key_by_its_path_through_the_same_check():
    text = json.dumps({"grid": {"rows": 4, "cols": 5}}).replace('"rows": 4', '"rows": 4, "rows": 4')
    with pytest.raises(ember.ScenarioError) as refused:
        ember.load_scenario(text)
    assert str(refused.value) == "$.grid.rows: duplicate key 'rows'."
