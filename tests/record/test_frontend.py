"""``MetricsStream.feed`` raises at the earliest feed that can know (output.md).

Before, the canonical-line front end held the first line back until its
newline arrived, so ``feed(b"xx")``, ``feed(b"[]")`` and a complete header
with a wrong schema version were all accepted silently.
"""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.canonical import canonical_json

from helpers.hostile_input import HEAD, LIMITED, LIMITED_RECORD, simulator_wrote
from helpers.strict import assert_same_json

SCENARIO = ember.load_scenario("builtin:small-room")
_out = io.BytesIO()
ember.run_episode(SCENARIO, "greedy", 0, _out)
RECORD = _out.getvalue()
HEADER_LINE = RECORD.split(b"\n")[0]  # {"header":{...},
WRONG_SCHEMA = HEADER_LINE.replace(b'"schema_version":"1.0"', b'"schema_version":"9.9"')
WRONG_SCHEMA_HEADER = WRONG_SCHEMA[:-1]  # up to the header's closing brace: complete, no comma, no newline
SCHEMA_MESSAGE = "$.header.schema_version: schema version '9.9' is not supported; expected one of ['1.0']."

# (input, index of the byte that decides, message)
CASES = {
    "not-json": (b"xx", 0, "$: Malformed JSON: the JSON parser reports: lexical error: invalid char in json text."),
    "array": (b"[]", 0, "$: Wrong type: a record must be a JSON object, not an array."),
    "wrong-schema": (WRONG_SCHEMA_HEADER, len(WRONG_SCHEMA_HEADER) - 1, SCHEMA_MESSAGE),
}


def feed_until_refused(chunks):
    """Index of the feed that raised, and its message (None, None if every feed was accepted)."""
    stream = ember.MetricsStream(SCENARIO)
    for i, chunk in enumerate(chunks):
        try:
            stream.feed(chunk)
        except ember.MetricsInputError as exc:
            return i, str(exc)
    return None, None


@pytest.mark.parametrize("name", list(CASES))
def test_feed_raises_at_once(name):
    data, _, message = CASES[name]
    assert feed_until_refused([data]) == (0, message)


@pytest.mark.parametrize("name", list(CASES))
def test_feed_byte_by_byte_raises_at_the_deciding_byte(name):
    data, decisive, message = CASES[name]
    assert feed_until_refused([data[i : i + 1] for i in range(len(data))]) == (decisive, message)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(CASES)), st.lists(st.integers(1, 400), min_size=1, max_size=40))
def test_feed_in_any_chunks_raises_at_the_chunk_holding_the_deciding_byte(name, cuts):
    data, decisive, message = CASES[name]
    points = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    chunks = [data[a:b] for a, b in zip([0] + points, points) if b > a]
    ends = [sum(map(len, chunks[: i + 1])) for i in range(len(chunks))]
    expected = next(i for i, end in enumerate(ends) if end > decisive)  # the chunk holding the deciding byte
    assert feed_until_refused(chunks) == (expected, message)


def test_the_first_line_with_its_comma_and_newline_is_still_refused_there():
    assert feed_until_refused([WRONG_SCHEMA + b"\n"]) == (0, SCHEMA_MESSAGE)


def test_a_good_record_in_any_chunks_still_takes_the_fast_path(monkeypatch):
    # Passing the first lines on at once must not cost the fast path: steps are still taken from their lines.
    from ember.engine.core import EpisodeEngine

    taken = []
    original = EpisodeEngine.take_line

    def spy(self, index, line):
        result = original(self, index, line)
        taken.append(result)
        return result

    monkeypatch.setattr(EpisodeEngine, "take_line", spy)
    expected = ember.episode_metrics(SCENARIO, RECORD).to_dict()
    for size in (1, 7, 65536):
        taken.clear()
        stream = ember.MetricsStream(SCENARIO)
        for start in range(0, len(RECORD), size):
            stream.feed(RECORD[start : start + size])
        assert_same_json(stream.close().to_dict(), expected)
        assert len(taken) == RECORD.count(b"\n") - 5 and all(taken), size  # all but 3 head lines, "]," and final_state


def forged_nested_step_line(record):
    """The record's first step line moved inside a made-up object at $.steps[0]."""
    value = json.loads(record)
    h, s0, steps, f = value["header"], value["initial_state"], value["steps"], value["final_state"]
    return (
        b'{"header":'
        + canonical_json(h)
        + b',"initial_state":'
        + canonical_json(s0)
        + b',"steps":[{\n'
        + b'"initial_state":1,\n"steps":[\n'
        + canonical_json(steps[0])
        + b"\n]}"
        + b"".join(b",\n" + canonical_json(step) for step in steps[1:])
        + b'\n],\n"final_state":'
        + canonical_json(f)
        + b"}\n"
    )


def test_regression_fast_path_step_line_nested_inside_another_value():
    # The canonical-line fast path took step 1 from a line the strict reader
    # placed at $.steps[0].steps[0]; the engine then skipped $.steps[0] (a
    # made-up object) as "the placeholder of a step already taken", and
    # measured a record the simulator never wrote.
    forged = forged_nested_step_line(LIMITED_RECORD)
    assert not simulator_wrote(LIMITED, forged)
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]"):
        ember.episode_metrics(LIMITED, forged)
    stream = ember.MetricsStream(LIMITED)
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[0\]"):
        for k in range(0, len(forged), 100):
            stream.feed(forged[k : k + 100])
        stream.close()


def test_regression_fast_path_deep_actions_raised_recursion_error():
    # The fast path parsed a step line's actions with json.loads, which
    # raises RecursionError (not a ValueError) on deep nesting.
    line = b'{"actions":{"A":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    with pytest.raises(ember.MetricsInputError, match="max_depth=32"):
        ember.episode_metrics(LIMITED, HEAD + line)
