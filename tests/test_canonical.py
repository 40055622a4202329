"""The fast canonical encoder emits exactly simulator.md §1's bytes."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json, canonical_json_reference, one_line, split_module_name

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), ids, st.text(max_size=12))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.one_of(ids, st.text(max_size=6)), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(values)
def test_fast_encoder_equals_reference(value):
    assert canonical_json(value) == canonical_json_reference(value)


def test_out_of_domain_values_fall_back_to_the_reference():
    for value in (2**70, -(2**70), {"a": [2**64]}, "\ud800", {1: 2}):
        try:
            expected = canonical_json_reference(value)
        except (TypeError, ValueError):
            continue
        assert canonical_json(value) == expected


def test_every_record_line_is_reference_canonical():
    sc = ember.load_scenario("builtin:office")
    out = io.BytesIO()
    ember.run_episode(sc, "random", 2, out)
    import json

    for line in out.getvalue().split(b"\n")[3:-3]:
        body = line[:-1] if line.endswith(b",") else line
        assert canonical_json_reference(json.loads(body)) == body


@pytest.mark.parametrize(
    ("text", "line"),
    [("a\n  b\tc\r\n", "a b c"), (ValueError("x\ny"), "x y"), ("", ""), ("  \n", ""), ("one", "one")],
)
def test_one_line_makes_every_run_of_whitespace_one_space(text, line):
    assert one_line(text) == line


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("pkg.mod:make", ("pkg.mod", "make")),
        ("mod:", ("mod", "")),
        (":make", ("", "make")),
        ("make", ("", "make")),
        ("a:b:c", ("a:b", "c")),
    ],
)
def test_split_module_name_splits_at_the_last_colon(text, parts):
    assert split_module_name(text) == parts
