"""The strict streaming record reader (simulator.md §1, §5): ember.record.reader."""

import dataclasses
import io
import json
import os
import re
import sys
import threading

import ijson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.errors import MetricsInputError
from ember.record import reader
from ember.record.limits import DEFAULT_LIMITS, RecordLimits
from ember.record.parts import iter_parts
from ember.record.reader import BACKEND_NAME, RecordParser

from helpers.strict import no_hang

IDS = ["p1", "p2", "p3", "p4"]


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def snapshot(t):
    return {
        "step": t,
        "people": [{"person_id": p, "status": "active", "position": [t % 7, i]} for i, p in enumerate(IDS)],
        "burning": [[0, 0], [0, t % 5]],
        "trapped": IDS[:3],
        "terminated": False,
        "termination_reason": None,
    }


def make_record(n_steps=5):
    """A record shaped like the simulator's (its values need not be consistent)."""
    header = {
        "schema_version": "1.0",
        "simulator_version": "1.0",
        "observation_version": "1.0",
        "scenario_id": "test",
        "scenario_hash": "sha256:" + "0123456789" * 6 + "abcd",
        "seed": 2**64 - 1,
    }
    steps = [
        {
            "step": t,
            "actions": dict.fromkeys(IDS, "north"),
            "movements": [{"person_id": p, "origin": [1, 1], "target": [0, 1], "outcome": "moved"} for p in IDS],
            "ignitions": [[0, t % 5]],
            "evacuations": [],
            "casualties": [{"person_id": "p4", "cause": "fire_spread"}] if t == 2 else [],
            "snapshot": snapshot(t),
        }
        for t in range(1, n_steps + 1)
    ]
    final = {"step": n_steps, "people": snapshot(n_steps)["people"], "trapped": [], "termination_reason": "max_steps"}
    return {"header": header, "initial_state": snapshot(0), "steps": steps, "final_state": final}


def record_bytes(record):
    """Canonical record bytes, simulator.md §5."""
    return (
        b'{"header":'
        + canonical(record["header"])
        + b',\n"initial_state":'
        + canonical(record["initial_state"])
        + b',\n"steps":[\n'
        + b",\n".join(canonical(s) for s in record["steps"])
        + b'\n],\n"final_state":'
        + canonical(record["final_state"])
        + b"}\n"
    )


def expected_parts(record):
    return [
        ("header", record["header"]),
        ("initial_state", record["initial_state"]),
        *(("step", i, s) for i, s in enumerate(record["steps"])),
        ("final_state", record["final_state"]),
    ]


class Sink:
    def __init__(self):
        self.calls = []

    def header(self, value):
        self.calls.append(("header", value))

    def initial_state(self, value):
        self.calls.append(("initial_state", value))

    def step(self, index, value):
        self.calls.append(("step", index, value))

    def final_state(self, value):
        self.calls.append(("final_state", value))

    def end(self):
        self.calls.append(("end",))


def parse(data, chunk=None, limits=DEFAULT_LIMITS):
    """Push ``data`` through a RecordParser in chunks of ``chunk`` bytes; the sink's calls."""
    sink = Sink()
    parser = RecordParser(sink, limits)
    step = chunk or max(len(data), 1)
    for start in range(0, len(data), step):
        parser.feed(data[start : start + step])
    parser.close()
    return sink.calls


def refused(data, chunk=None, limits=DEFAULT_LIMITS):
    """The message of the MetricsInputError that reading ``data`` raises."""
    with pytest.raises(MetricsInputError) as info:
        parse(data, chunk, limits)
    return str(info.value)


RECORD = make_record(14)
DATA = record_bytes(RECORD)
EXPECTED = expected_parts(RECORD) + [("end",)]


def step_line(data, index):
    """Offsets (start, end) of step ``index``'s canonical line in ``data``."""
    start = data.index(b'"steps":[\n') + len(b'"steps":[\n')
    for _ in range(index):
        start = data.index(b"\n", start) + 1
    end = data.index(b"\n", start)
    return start, end - 1 if data[end - 1 : end] == b"," else end


def with_step(data, index, edit):
    """``data`` with step ``index``'s text replaced by ``edit(text)``."""
    start, end = step_line(data, index)
    return data[:start] + edit(data[start:end]) + data[end:]


# --- valid records ---------------------------------------------------------------


def test_backend_is_the_c_one():
    assert BACKEND_NAME == "yajl2_c"


def test_canonical_record_gives_its_parts_in_order():
    assert parse(DATA) == EXPECTED
    assert parse(DATA, chunk=1000) == EXPECTED


def test_key_sorted_indented_dump_is_valid():
    data = json.dumps(RECORD, sort_keys=True, indent=2).encode()
    assert data.startswith(b'{\n  "final_state"')
    calls = parse(data)
    assert calls[0] == ("final_state", RECORD["final_state"])
    assert calls[1:] == EXPECTED[:-2] + [("end",)]


def test_initial_state_may_come_before_header():
    swapped = {k: RECORD[k] for k in ("initial_state", "header", "steps", "final_state")}
    calls = parse(json.dumps(swapped).encode())
    assert [c[0] for c in calls[:2]] == ["initial_state", "header"]
    assert sorted(calls[:2]) == sorted(EXPECTED[:2])
    assert calls[2:] == EXPECTED[2:]


def test_any_rfc8259_whitespace_is_accepted():
    data = json.dumps(RECORD, indent="\t\r", separators=(" \n,\r ", "\t: \n")).encode()
    assert parse(b" \r\n\t" + data + b"\n\t \r\n") == EXPECTED


def test_one_byte_at_a_time_gives_the_same_parts():
    assert parse(DATA, chunk=1) == EXPECTED


def test_each_part_is_handed_on_as_soon_as_its_closing_brace_is_read():
    ends = [len(b'{"header":' + canonical(RECORD["header"])) - 1]
    ends.append(DATA.index(b',\n"steps"') - 1)
    ends += [step_line(DATA, i)[1] - 1 for i in range(len(RECORD["steps"]))]
    ends.append(len(DATA) - 3)  # final_state's brace, then "}\n"
    for i in range(len(RECORD["steps"])):
        assert DATA[ends[2 + i]] == ord("}") and DATA[ends[2 + i] + 1] in b",\n"
    sink = Sink()
    parser = RecordParser(sink)
    for offset in range(len(DATA)):
        parser.feed(DATA[offset : offset + 1])
        assert len(sink.calls) == sum(end <= offset for end in ends), offset
    assert sink.calls == EXPECTED[:-1]
    parser.close()
    assert sink.calls == EXPECTED


def test_a_step_is_handed_on_before_the_record_ends():
    sink = Sink()
    parser = RecordParser(sink)
    parser.feed(DATA[: step_line(DATA, 3)[1] - 1])
    assert [c[:2] for c in sink.calls] == [("header", RECORD["header"]), ("initial_state", RECORD["initial_state"])] + [
        ("step", i) for i in range(3)
    ]
    assert sink.calls[-1][2] == RECORD["steps"][2]


def test_zero_steps_and_scalar_parts_pass_through_unchecked():
    data = b'{"header":1,"initial_state":[true],"steps":[null,"s",[]],"final_state":{}}'
    assert parse(data) == [
        ("header", 1),
        ("initial_state", [True]),
        ("step", 0, None),
        ("step", 1, "s"),
        ("step", 2, []),
        ("final_state", {}),
        ("end",),
    ]
    assert parse(b'{"header":{},"initial_state":{},"steps":[],"final_state":{}}')[-2:] == [
        ("final_state", {}),
        ("end",),
    ]


def test_valid_surrogate_pairs_and_escapes_are_decoded():
    text = 'emoji \U0001f600, quote ", backslash \\, e\u0301, tab \t'
    data = json.dumps({"header": {"s": text}, "initial_state": {}, "steps": [], "final_state": {}}).encode()
    assert b"\\ud83d\\ude00" in data
    for chunk in (None, 1, 3, 7):
        assert parse(data, chunk)[0] == ("header", {"s": text})
    assert parse(b'{"header":{"s":"\\uD83D\\uDE00\\\\ud800"},' + DATA[DATA.index(b'"initial_state"') :])[0] == (
        "header",
        {"s": "\U0001f600\\ud800"},
    )


def test_digits_in_strings_are_not_numbers():
    long_id = "1" * 64  # a valid ID
    digits = "9" * 200
    value = {long_id: digits, "q": 'a"' + digits, "b": "\\" + digits, "k": digits + '"' + digits}
    data = json.dumps({"header": value, "initial_state": {}, "steps": [], "final_state": {}}).encode()
    for chunk in (None, 1, 2, 41, 100):
        assert parse(data, chunk)[0] == ("header", value)


# --- the sink ------------------------------------------------------------------


class Boom(Exception):
    pass


def test_sink_errors_pass_unchanged_and_kill_the_parser():
    for error in (Boom("mine"), ValueError("also mine"), MetricsInputError("the sink's own")):

        class Failing(Sink):
            def step(self, index, value, error=error):  # bound now: the class is used within this iteration
                if index == 2:
                    raise error

        parser = RecordParser(Failing())
        with pytest.raises(type(error)) as info:
            parser.feed(DATA)
        assert info.value is error
        with pytest.raises(MetricsInputError, match="already failed"):
            parser.feed(b" ")
        with pytest.raises(MetricsInputError, match="already failed"):
            parser.close()


def test_sink_end_errors_pass_unchanged():
    class Failing(Sink):
        def end(self):
            raise Boom("end")

    parser = RecordParser(Failing())
    parser.feed(DATA)
    with pytest.raises(Boom):
        parser.close()


def test_end_is_called_once_by_close_and_the_parser_then_refuses_input():
    sink = Sink()
    parser = RecordParser(sink)
    parser.feed(DATA)
    assert ("end",) not in sink.calls
    parser.close()
    assert sink.calls.count(("end",)) == 1
    with pytest.raises(MetricsInputError, match="closed"):
        parser.feed(b" ")
    with pytest.raises(MetricsInputError, match="closed"):
        parser.close()


def test_a_parser_is_dead_after_bad_input():
    parser = RecordParser(Sink())
    with pytest.raises(MetricsInputError, match="Malformed JSON"):
        parser.feed(b"{]")
    with pytest.raises(MetricsInputError, match="already failed"):
        parser.feed(DATA)


def test_text_is_refused():
    with pytest.raises(MetricsInputError, match="must be bytes"):
        RecordParser(Sink()).feed(DATA.decode())
    with pytest.raises(TypeError):
        RecordParser(Sink()).feed(12)


# --- strictness ------------------------------------------------------------------


def test_byte_order_mark_is_refused():
    for chunk in (None, 1, 2):
        assert "byte-order mark" in refused(b"\xef\xbb\xbf" + DATA, chunk)
    assert "byte-order mark" not in refused(b"\xef\xbb")
    assert "$: Malformed JSON" in refused(b"\xef\xbb{}")


@pytest.mark.parametrize(
    "raw",
    [b"\xff", b"\xc3(", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"abc\xe2\x82"],
    ids=["ff", "bad-continuation", "overlong", "utf8-surrogate", "above-10ffff", "cut"],
)
def test_invalid_utf8_in_a_string_is_refused(raw):
    data = with_step(DATA, 4, lambda text: text.replace(b'"moved"', b'"' + raw + b'"', 1))
    message = refused(data)
    assert message.startswith("$.steps[4].movements[0].outcome: Malformed JSON")
    assert "UTF" in message
    assert refused(data, chunk=1) == message


def test_invalid_utf8_outside_a_string_is_refused():
    message = refused(with_step(DATA, 1, lambda text: text.replace(b"{", b"{\xff", 1)))
    assert message.startswith("$.steps[1]: Malformed JSON:")


@pytest.mark.parametrize(
    "data, what",
    [(b"[]", "an array"), (b"5", "a number"), (b'"record"', "a string"), (b"null", "null"), (b"true", "a boolean")],
)
def test_top_level_must_be_an_object(data, what):
    assert refused(data) == f"$: Wrong type: a record must be a JSON object, not {what}."


def test_other_top_level_keys_are_refused():
    data = DATA[:-2] + b',"extra":{}}'
    assert refused(data).startswith("$.extra: Unexpected key:")
    assert refused(b'{"Header":{}}').startswith("$.Header: Unexpected key:")


def test_duplicate_keys_are_refused_at_any_depth():
    data = with_step(DATA, 3, lambda text: text.replace(b'"actions":{', b'"actions":{"p1":"east",', 1))
    assert refused(data).startswith("$.steps[3].actions.p1: Duplicate key:")
    data = with_step(DATA, 5, lambda text: text.replace(b'"position":[', b'"position":[{"a":1,"a":1},', 1))
    assert refused(data).startswith("$.steps[5].snapshot.people[0].position[0].a: Duplicate key:")
    assert refused(DATA[:-2] + b',"header":{}}').startswith("$.header: Duplicate key:")
    assert refused(b'{"header":{"":1,"":2}}').startswith('$.header[""]: Duplicate key:')


def test_steps_must_follow_header_and_initial_state():
    order = ("header", "steps", "initial_state", "final_state")
    message = refused(json.dumps({k: RECORD[k] for k in order}).encode())
    assert message.startswith("$.steps: Misplaced key:") and "initial_state" in message
    order = ("steps", "header", "initial_state", "final_state")
    message = refused(json.dumps({k: RECORD[k] for k in order}).encode())
    assert "header and initial_state did not" in message


@pytest.mark.parametrize("missing", ["header", "initial_state", "steps", "final_state"])
def test_missing_keys_are_refused(missing):
    data = json.dumps({k: v for k, v in RECORD.items() if k != missing}).encode()
    if missing in ("header", "initial_state"):
        assert refused(data).startswith("$.steps: Misplaced key")
    else:
        assert refused(data) == f"$: Missing key: the record object has no {missing}."
    assert refused(b"{}") == (
        "$: Missing key: the record object has no header and no initial_state and no steps and no final_state."
    )


@pytest.mark.parametrize(
    "value, what", [(b"{}", "an object"), (b"3", "a number"), (b'"x"', "a string"), (b"null", "null")]
)
def test_steps_must_be_an_array(value, what):
    data = b'{"header":{},"initial_state":{},"steps":' + value + b',"final_state":{}}'
    assert refused(data) == f"$.steps: Wrong type: steps must be an array, not {what}."


@pytest.mark.parametrize("number", [b"1.0", b"1e3", b"-0.5", b"1E+2", b"0e0", b"-1.5e-7", b"1e99999999999999999999999"])
def test_non_integer_numbers_are_refused(number):
    data = with_step(
        DATA, 12, lambda text: text.replace(b'"trapped":["p1","p2","p3"', b'"trapped":["p1","p2","p3",' + number, 1)
    )
    assert refused(data).startswith("$.steps[12].snapshot.trapped[3]: Non-integer number:")
    assert refused(b'{"header":{"seed":' + number + b"}}").startswith("$.header.seed: Non-integer number:")


@pytest.mark.parametrize(
    "token", [b"NaN", b"Infinity", b"-Infinity", b"01", b"-01", b"00", b"+1", b"0x10", b".5", b"1."]
)
def test_nan_infinity_and_malformed_integers_are_refused(token):
    message = refused(b'{"header":{"seed":' + token + b"}}")
    assert message.startswith("$.header.seed: Malformed JSON:")


def test_integers_within_the_grammar_are_kept_exactly():
    values = [0, -0, 1, -1, 2**64 - 1, -(2**63), 10**39, -(10**39)]
    assert parse(b'{"header":' + json.dumps(values).encode() + b',"initial_state":{},"steps":[],"final_state":{}}')[
        0
    ] == (
        "header",
        values,
    )
    assert parse(b'{"header":[-0],"initial_state":{},"steps":[],"final_state":{}}')[0] == ("header", [0])


@pytest.mark.parametrize(
    "data, path",
    [
        (b'{"header":{"a":1,}}', "$.header.a"),
        (b'{"header":{"a" 1}}', "$.header.a"),
        (b'{"header":[1,]}', "$.header[1]"),
        (b"{'header':{}}", "$"),
        (b'{"header":{"a":tru}}', "$.header.a"),
        (b'{"header":{"a":"x\x01"}}', "$.header.a"),
        (b'{"header":{"a":"\\x"}}', "$.header.a"),
        (b'{"header":{} /* comment */}', "$.header"),
        (b'{"header":{"a":[{"b":[1 2]}]}}', "$.header.a[0].b[1]"),
    ],
)
def test_syntax_errors_name_the_innermost_place_and_yajls_reason(data, path):
    message = refused(data)
    assert message.startswith(f"{path}: Malformed JSON: the JSON parser reports: ")
    assert refused(data, chunk=1) == message


def test_truncation_is_refused_at_close_naming_where():
    start, _ = step_line(DATA, 11)
    assert refused(DATA[:start]).startswith("$.steps[11]: the record is truncated")
    message = refused(DATA[: start + 20])
    assert message.startswith("$.steps[11].") and "the record is truncated" in message


def test_every_proper_prefix_of_a_record_is_truncated_or_empty():
    data = record_bytes(make_record(2))
    complete = len(data) - 1  # everything up to the last "}"
    parser = RecordParser(Sink())
    for end in range(len(data) + 1):
        if end < complete:
            message = refused(data[:end])
            assert ("the record is truncated" if end else "the record is empty") in message, end
        else:
            assert parse(data[:end])[-1] == ("end",)
        parser.feed(data[end : end + 1])
    parser.close()


def test_an_empty_input_is_refused():
    assert refused(b"") == "$: the record is empty: the input holds no JSON text."
    assert refused(b" \n\t\r ") == "$: the record is empty: the input holds no JSON text."
    assert refused(b"", chunk=1) == "$: the record is empty: the input holds no JSON text."


@pytest.mark.parametrize("tail", [b"x", b"{}", b"\x00", b"0", b",", b"]", b'""'])
def test_trailing_data_is_refused(tail):
    for chunk in (None, 1):
        message = refused(DATA + tail, chunk)
        assert message.startswith("$: Malformed JSON: data follows the end of the record object")
        message = refused(DATA + b"\n \t" + tail, chunk)
        assert message.startswith("$: Malformed JSON: data follows the end of the record object")


@pytest.mark.parametrize("byte", [b"\x0b", b"\x0c"])
def test_vertical_tab_and_form_feed_are_not_whitespace(byte):
    # yajl itself takes them for whitespace
    data = with_step(DATA, 2, lambda text: text.replace(b'"actions":', b'"actions":' + byte, 1))
    assert refused(data).startswith("$.steps[2].actions: Malformed JSON: byte")
    assert refused(data, chunk=1).startswith("$.steps[2].actions: Malformed JSON: byte")
    assert refused(DATA[:-1] + byte).startswith("$: Malformed JSON: byte")
    assert refused(b'{"header":"a' + byte + b'"}').startswith("$.header: Malformed JSON:")


@pytest.mark.parametrize(
    "escape", [b"\\ud800", b"\\uDBFF", b"\\udc00", b"\\ud800\\u0041", b"\\ud800\\ud800", b"\\ud800x", b"\\ude00\\ud83d"]
)
def test_unpaired_surrogate_escapes_are_refused(escape):
    # yajl decodes these to "?" or to a wrong character
    data = with_step(DATA, 6, lambda text: text.replace(b'"moved"', b'"a' + escape + b'"', 1))
    for chunk in (None, 1, 5):
        message = refused(data, chunk)
        assert message.startswith("$.steps[6].movements[0].outcome: Malformed JSON: a string has the unpaired")
    assert "unpaired" in refused(b'{"header":{"' + escape + b'":1}}')


# --- limits ----------------------------------------------------------------------


def test_limit_defaults():
    assert (
        RecordLimits(max_depth=32, max_string_length=1_048_576, max_integer_digits=40, max_part_bytes=64 * 1024 * 1024)
        == DEFAULT_LIMITS
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.max_depth = 3
    for bad in ({"max_depth": 0}, {"max_string_length": -1}, {"max_part_bytes": 1.5}, {"max_integer_digits": 641}):
        with pytest.raises(ValueError):
            RecordLimits(**bad)


def nested_step(depth):
    """A record whose step 0 makes ``depth`` arrays and objects open at once."""
    inner = "[" * (depth - 3) + "]" * (depth - 3)  # the record object, steps and the step itself come first
    return ('{"header":{},"initial_state":{},"steps":[{"a":' + inner + '}],"final_state":{}}').encode()


def test_max_depth():
    assert parse(nested_step(32))[2] == ("step", 0, {"a": json.loads("[" * 29 + "]" * 29)})
    message = refused(nested_step(33))
    assert (
        message
        == "$.steps[0].a" + "[0]" * 29 + ": Limit exceeded: arrays and objects are nested more than max_depth=32 deep."
    )
    assert refused(nested_step(10), limits=RecordLimits(max_depth=9)).startswith("$.steps[0].a[0]")
    assert refused(b"[" * 100_000).startswith("$: Wrong type")
    assert "max_depth=1" in refused(b'{"header":{}}', limits=RecordLimits(max_depth=1))


def test_max_string_length():
    limits = RecordLimits(max_string_length=13)  # as long as "initial_state"
    ok = b'{"header":{"0123456789abc":"0123456789abc"},"initial_state":{},"steps":[],"final_state":{}}'
    assert parse(ok, limits=limits)[0] == ("header", {"0123456789abc": "0123456789abc"})
    message = refused(b'{"header":{"a":["\xc3\xa9' + b"x" * 13 + b'"]}}', limits=limits)
    assert message == "$.header.a[0]: Limit exceeded: a string is longer than max_string_length=13 characters."
    message = refused(b'{"header":{"a":1,"' + b"k" * 14 + b'":1}}', limits=limits)
    assert message.startswith("$.header: Limit exceeded: an object key is longer than max_string_length=13")
    # characters, not bytes: 13 two-byte characters are within the limit
    data = b'{"header":"' + b"\xc3\xa9" * 13 + b'","initial_state":{},"steps":[],"final_state":{}}'
    assert parse(data, limits=limits)[0] == ("header", "\u00e9" * 13)


def test_max_integer_digits():
    forty = b"9" * 40
    data = b'{"header":[' + forty + b",-" + forty + b'],"initial_state":{},"steps":[],"final_state":{}}'
    for chunk in (None, 1, 7):
        assert parse(data, chunk)[0] == ("header", [10**40 - 1, -(10**40 - 1)])
    for number in (b"1" + forty, b"-1" + forty):
        for chunk in (None, 1, 7):
            message = refused(b'{"header":{"seed":' + number + b"}}", chunk)
            assert message == "$.header.seed: Limit exceeded: a number has more than max_integer_digits=40 digits."
    assert refused(b'{"header":[123456]}', limits=RecordLimits(max_integer_digits=5)).startswith(
        "$.header[0]: Limit exceeded"
    )


@pytest.mark.parametrize("int_max_str_digits", [None, 0])
def test_a_huge_integer_is_refused_quickly(int_max_str_digits):
    # ijson 3.6 passes a NULL value on past sys.get_int_max_str_digits(),
    # and with that limit off int() of a million digits takes seconds.
    previous = sys.get_int_max_str_digits()
    if int_max_str_digits is not None:
        sys.set_int_max_str_digits(int_max_str_digits)
    try:
        with no_hang():
            for data in (b'{"header":{"seed":' + b"7" * 10**6 + b"}}", b'{"header":[1.' + b"7" * 10**6 + b"]}"):
                assert re.match(r"\$\.header\S*: Limit exceeded", refused(data))
            assert refused(b'{"header":[1e' + b"9" * 40 + b"]}").startswith("$.header[0]: Non-integer number")
    finally:
        sys.set_int_max_str_digits(previous)


def endless(head, filler, chunks_read):
    """``head`` then 64 KiB chunks of ``filler`` up to 1 GiB, counting how many were taken."""
    yield head
    chunk = filler * (65536 // len(filler))
    for _ in range(2**30 // len(chunk)):
        chunks_read[0] += 1
        yield chunk


@pytest.mark.parametrize(
    "head, filler, path",
    [
        (b'{"header":"', b"a", "$.header"),
        (b'{"header":{},"initial_state":{},"steps":[{},{"a":"', b"\xc3\xa9", "$.steps[1].a"),
        (b'{"header":{},"initial_state":{},"steps":[{},{"a":[', b"1,", "$.steps[1].a["),
        (b'{"header":{"a":"', b"0123456789", "$.header.a"),
    ],
)
def test_max_part_bytes_refuses_a_huge_part_while_reading_it(head, filler, path):
    chunks_read = [0]
    limits = RecordLimits(max_part_bytes=1 << 20)
    with pytest.raises(MetricsInputError) as info:
        for _ in iter_parts(endless(head, filler, chunks_read), limits=limits):
            pass
    assert str(info.value).startswith(path) and ": Limit exceeded" in str(info.value)
    assert "max_part_bytes=1048576" in str(info.value)
    assert 16 <= chunks_read[0] <= 18


def test_max_part_bytes_counts_one_part_at_a_time():
    record = make_record(200)
    data = record_bytes(record)
    limit = 4 * max(len(canonical(s)) for s in record["steps"])
    assert len(data) > 40 * limit
    assert parse(data, chunk=1000, limits=RecordLimits(max_part_bytes=limit))[-1] == ("end",)
    assert parse(data + b" " * 3 * limit, limits=RecordLimits(max_part_bytes=limit))[-1] == ("end",)
    assert re.match(r"\$\.header\S*: Limit exceeded", refused(data, limits=RecordLimits(max_part_bytes=100)))


# --- the pull API ------------------------------------------------------------------

PARTS = EXPECTED[:-1]


def test_iter_parts_on_paths(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(DATA)
    assert list(iter_parts(path)) == PARTS
    assert list(iter_parts(str(path), chunk_size=100)) == PARTS


def test_iter_parts_on_binary_files(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(DATA)
    with open(path, "rb") as stream:
        assert list(iter_parts(stream)) == PARTS
    with open(path, "rb", buffering=0) as stream:
        assert list(iter_parts(stream, chunk_size=7)) == PARTS
    assert list(iter_parts(io.BytesIO(DATA), chunk_size=3)) == PARTS


def test_iter_parts_on_bytes_and_chunks():
    assert list(iter_parts(DATA)) == PARTS
    assert list(iter_parts(bytearray(DATA), chunk_size=5)) == PARTS
    assert list(iter_parts(memoryview(DATA), chunk_size=64)) == PARTS
    assert list(iter_parts([DATA[:10], b"", DATA[10:500], bytearray(DATA[500:])])) == PARTS
    assert list(iter_parts(DATA[i : i + 1] for i in range(len(DATA)))) == PARTS


def test_iter_parts_refuses_text(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(DATA)
    with open(path, encoding="utf-8") as stream:
        with pytest.raises(MetricsInputError, match="must be read as bytes"):
            list(iter_parts(stream))
    with pytest.raises(MetricsInputError, match="not bytes"):
        list(iter_parts([DATA.decode()]))


def test_iter_parts_reports_bad_input_as_metrics_input_error():
    with pytest.raises(MetricsInputError, match="truncated"):
        list(iter_parts(DATA[:-5]))
    gen = iter_parts(with_step(DATA, 9, lambda text: text.replace(b'"step":10', b'"step":10.5', 1)), 100)
    assert next(gen)[0] == "header"
    with pytest.raises(MetricsInputError, match=r"^\$\.steps\[9\]"):
        list(gen)


def test_iter_parts_reads_a_pipe_as_data_arrives():
    read_fd, write_fd = os.pipe()
    first_step_seen = threading.Event()
    seen_before_final = []
    start, _ = step_line(DATA, 0)
    _, last = step_line(DATA, len(RECORD["steps"]) - 1)

    def writer():
        with open(write_fd, "wb", buffering=0) as out:
            out.write(DATA[:start])
            for i in range(len(RECORD["steps"])):
                s, e = step_line(DATA, i)
                out.write(DATA[s : e + 2])
            seen_before_final.append(first_step_seen.wait(timeout=10))
            out.write(DATA[last + 2 :])

    thread = threading.Thread(target=writer)
    thread.start()
    parts = []
    with open(read_fd, "rb") as stream:
        for part in iter_parts(stream):
            parts.append(part)
            if part[0] == "step":
                first_step_seen.set()
    thread.join()
    assert seen_before_final == [True]
    assert parts == PARTS


def test_the_pure_python_backend_works_too(monkeypatch):
    monkeypatch.setattr(reader, "_backend", ijson.get_backend("python"))
    assert parse(DATA, chunk=100) == EXPECTED
    assert "the record is truncated" in refused(DATA[:-9])
    assert refused(DATA + b"x").startswith("$: Malformed JSON: data follows")
    assert refused(b'{"header":{"a":1.5}}').startswith("$.header.a: Non-integer number")
    assert re.match(r"\$\.header\.a\S*: Malformed JSON", refused(b'{"header":{"a":[1,}}'))


# --- round trip ----------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**40) + 1, 10**40 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def records(draw):
    record = {
        "header": draw(objects),
        "initial_state": draw(objects),
        "steps": draw(st.lists(json_values, max_size=5)),
        "final_state": draw(objects),
    }
    first = draw(st.permutations(["header", "initial_state"]))
    order = draw(
        st.sampled_from(
            [[*first, "steps", "final_state"], [*first, "final_state", "steps"], ["final_state", *first, "steps"]]
        )
    )
    return {key: record[key] for key in order}


@settings(max_examples=150, deadline=None)
@given(
    record=records(),
    indent=st.sampled_from([None, 0, 1, "\t", " \r\n"]),
    separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", "\t:\r"), ("\r\n,", " : ")]),
    sort_keys=st.booleans(),
    ensure_ascii=st.booleans(),
    chunk=st.integers(1, 64),
)
def test_json_dumps_round_trips(record, indent, separators, sort_keys, ensure_ascii, chunk):
    text = json.dumps(record, indent=indent, separators=separators, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    calls = parse(text.encode(), chunk, limits=RecordLimits(max_depth=64))
    if sort_keys:
        record = dict(sorted(record.items()))
    expected = []
    for key, value in record.items():
        if key == "steps":
            expected += [("step", i, step) for i, step in enumerate(value)]
        else:
            expected.append((key, value))
    assert calls == expected + [("end",)]
