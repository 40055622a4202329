"""The results layer in-process: the schema of a row and of campaign.json, counting rows, limits, rules.

The row checks that lived in the campaign store (tests/test_campaign_store.py
until the results layer) are here, with the one schema's words.
"""

import array
import hashlib
import json
import sys

import pytest

from ember import errors
from ember.errors import EmberError, ResultsError
from ember.results import (
    MAX_LINE_BYTES,
    OkRows,
    StatisticsRules,
    check_campaign,
    read_results,
    results_of_bytes,
)

from helpers.ranking_results import ResultsDir, campaign_dict, canonical_line, failed_row, hand_metrics, ok_row

H1 = "sha256:" + "1" * 64
H2 = "sha256:" + "2" * 64


def campaign(seeds=(0, 1), policies=("p",), scenarios=None):
    scenarios = scenarios or [("a", H1, "a.json", seeds)]
    return campaign_dict("c", scenarios, [(p, "builtin", "greedy") for p in policies])


def row(policy="p", seed=0, **changes):
    value = ok_row(policy, hand_metrics("a", H1, seed))
    value.update(changes)
    return value


def refused(campaign_value, *lines):
    data = b"".join(canonical_line(v) if isinstance(v, dict) else v for v in lines)
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(campaign_value, data)
    return caught.value


def test_one_error_class_under_one_name():
    assert not hasattr(errors, "RankingInputError")
    error = ResultsError("episodes.jsonl", 3, "why", "some/dir")
    assert isinstance(error, EmberError) and isinstance(error, ValueError)
    assert str(error) == "some/dir/episodes.jsonl:3: why"
    assert (error.file, error.line, error.reason, error.directory) == ("episodes.jsonl", 3, "why", "some/dir")
    assert str(ResultsError(".", None, "no such directory", "x/")) == "x: no such directory"
    assert str(ResultsError("campaign.json", None, "bad")) == "campaign.json: bad"


# The store's former row checks (tests/test_campaign_store.py), each with the one schema's reason.
@pytest.mark.parametrize(
    "line, message",
    [
        (b"[1]\n", "$: expected an object, got [1]"),
        (b'{"a": 1, "a": 2}\n', "not a JSON text: duplicate key 'a'"),
        (b"NaN\n", "not a JSON text: NaN is not JSON"),
        (canonical_line(row(seed=True)), "$.seed: expected an integer, got true"),
        (canonical_line(row(policy=["p"])), '$.policy: expected a string, got ["p"]'),
        (canonical_line(row(status="done")), '$.status: expected "ok" or "failed", got "done"'),
        (canonical_line(row(metrics=None)), "$.metrics: expected an object, got null"),
        (canonical_line(row(policy="q")), '$.policy: "q" is not a policy of the campaign'),
        (canonical_line(row(seed=5)), f'$: scenario "{H1}" with seed 5 is not an episode of the campaign'),
        (canonical_line(row(scenario_id="b")), '$.scenario_id: the campaign names this scenario hash "a", got "b"'),
        (canonical_line(row(steps=51)), "$.metrics.time.episode_steps: expected the row's steps 51, got 50"),
        (canonical_line(row(record="", record_sha256="a" * 64)), '$.record: expected a relative path, got ""'),
        (canonical_line(row(record="/x", record_sha256="a" * 64)), '$.record: expected a relative path, got "/x"'),
        (b"1e999\n", "not a JSON text: number 1e999 is out of range"),
    ],
)
def test_lines_that_are_not_rows(line, message):
    error = refused(
        campaign(), row(seed=1), row(policy="p", seed=0, status="failed", error="x", metrics=None, steps=None), line
    )
    assert (error.file, error.line) == ("episodes.jsonl", 3)
    assert str(error) == f"episodes.jsonl:3: {message}"


def test_a_row_after_an_ok_row_is_refused_and_a_failed_row_may_be_followed():
    failed = failed_row("p", "a", H1, 0)
    results = results_of_bytes(campaign(), canonical_line(failed) + canonical_line(row()))
    counting = results.statuses.place("p", (H1, 0))
    assert counting.ok and counting.previous == 1 and counting.line == 2
    error = refused(campaign(), failed, row(), row())
    assert str(error) == f'episodes.jsonl:3: a row for policy "p", scenario "{H1}", seed 0 after its ok row on line 2'


def test_campaign_json_keeps_its_seeds_in_an_array_not_the_files_int_objects():
    """8 bytes a seed, and no reference to the parsed file's ints: without ``value`` they go (a resume's table)."""
    value = campaign(seeds=(7, 3, 2**63 - 1, 0, 10**12))
    seeds = value["scenarios"][0]["seeds"]
    big = seeds[-2:]  # ints no cache shares (10^12, 2^63 - 1): their reference counts are the file's alone
    counts = [sys.getrefcount(seed) for seed in big]
    checked = check_campaign(value)
    scenario_id, kept = checked.scenarios[H1]
    assert scenario_id == "a" and isinstance(kept, array.array) and kept.typecode == "q"
    assert list(kept) == seeds == [0, 3, 7, 10**12, 2**63 - 1]
    assert [sys.getrefcount(seed) for seed in big] == counts  # a tuple would hold each once more
    assert list(checked.keys) == [(H1, seed) for seed in seeds] and len(checked.keys) == 5
    assert (H1, 2**63 - 1) in checked.keys and (H1, 5) not in checked.keys and (H2, 0) not in checked.keys
    assert [checked.keys.members[H1].position(seed) for seed in (0, 7, 2**63 - 1, 5)] == [0, 2, 4, None]


def test_a_record_path_may_leave_the_folder_it_is_relative_to():
    """A records entry's path is relative to the campaign file's folder, which it may leave (../subs)."""
    kept = row(record="../subs/a/0.record", record_sha256="a" * 64)
    ok_rows = OkRows()
    results_of_bytes(campaign(), canonical_line(kept), consumers=(ok_rows,))
    assert ok_rows[("p", (H1, 0))].record == "../subs/a/0.record"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["policies"][0].update(kind="x"),
            '$.policies[0]: unknown key "kind" (expected only name, builtin)',
        ),
        (lambda c: c["scenarios"][0].pop("source"), "$.scenarios[0]: missing key 'source'"),
        (lambda c: c["scenarios"][0].update(source=1), "$.scenarios[0].source: expected a string, got 1"),
        (
            lambda c: c["versions"].update(extra="1"),
            '$.versions: unknown key "extra" (expected only metrics, ranking, simulator, observation, package)',
        ),
        (lambda c: c["versions"].update(simulator=1), "$.versions.simulator: expected a string, got 1"),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2}),
            "$.policies[1].step_timeout: expected a number > 0 written as a float, got 2",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "python": "m:f"}),
            "$.policies[1]: missing key 'step_timeout'",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "records": 3}),
            "$.policies[1].records: expected a string, got 3",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2.0, "code": "sha256:AB"}),
            '$.policies[1].code: expected sha256:<64 hex>, got "sha256:AB"',
        ),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2.0, "code": 7}),
            "$.policies[1].code: expected a string, got 7",
        ),
        (
            lambda c: c["policies"][0].update(code="sha256:" + "0" * 64),
            '$.policies[0]: unknown key "code" (expected only name, builtin)',
        ),
    ],
)
def test_campaign_json_has_exactly_its_shape(change, message):
    value = campaign()
    change(value)
    error = refused(value)
    assert (error.file, error.line) == ("campaign.json", None)
    assert str(error) == f"campaign.json: {message}"


def test_a_policy_of_every_kind_is_read():
    value = campaign_dict(
        "c",
        [("a", H1, "a.json", (0,))],
        [("b", "builtin", "greedy"), ("g", "agent", "python3 a.py"), ("y", "python", "m:f"), ("r", "records", "subs")],
    )
    results = results_of_bytes(value, b"")
    assert results.campaign.policies == {"b": "builtin", "g": "agent", "y": "python", "r": "records"}


def test_an_agent_or_python_policy_is_read_with_its_code_and_without_it():
    """campaign.md 1.1: ``code`` for agent and python policies; a campaign.json made before 1.1 has none."""
    code = "sha256:" + "0123456789abcdef" * 4
    value = campaign_dict(
        "c",
        [("a", H1, "a.json", (0,))],
        [("g", "agent", "python3 a.py"), ("y", "python", "m:f"), ("old", "agent", "python3 b.py")],
    )
    value["policies"][0]["code"] = code
    value["policies"][1]["code"] = code
    results = results_of_bytes(value, b"")
    assert results.campaign.policies == {"g": "agent", "y": "python", "old": "agent"}
    assert results.campaign.value["policies"][0]["code"] == code


def test_the_file_reader_and_the_bytes_reader_agree(tmp_path):
    """Streamed line by line from the file, or split from bytes: the same counting rows, digest and warnings."""
    value = campaign(seeds=(0, 1, 2), policies=("p", "q"))
    results = ResultsDir(tmp_path / "r", value)
    lines = [row(seed=0), failed_row("q", "a", H1, 0), row(policy="q", seed=0), row(seed=2)]
    results.append(*lines)
    results.append(b'{"torn')
    from_file = read_results(results.path)
    from_bytes = results_of_bytes(value, results.episodes())
    assert (
        from_file.warnings
        == from_bytes.warnings
        == ["episodes.jsonl:5: ignored 6 bytes after the last newline (a torn line)"]
    )
    assert from_file.torn == from_bytes.torn == b'{"torn'
    whole = results.episodes()
    assert (
        from_file.episodes_sha256 == from_bytes.episodes_sha256 == hashlib.sha256(whole[: -len(b'{"torn')]).hexdigest()
    )
    assert from_file.lines == from_bytes.lines == 4
    slots = [(policy, (H1, seed)) for policy in ("p", "q") for seed in (0, 1, 2)]
    having = []
    for slot in slots:
        a, b = from_file.statuses.place(*slot), from_bytes.statuses.place(*slot)
        assert (a is None) == (b is None)
        if a is None:
            continue
        having.append(slot)
        assert (a.line, a.offset, a.length, a.ok, a.previous) == (b.line, b.offset, b.length, b.ok, b.previous)
        # The offset and length locate the line in the file.
        assert json.loads(whole[a.offset : a.offset + a.length]) == lines[a.line - 1]
    assert having == [("p", (H1, 0)), ("p", (H1, 2)), ("q", (H1, 0))]
    # Read again at their places, from the file or the bytes: the same rows.
    for again in (list(from_file.counting_rows(slots)), list(from_bytes.counting_rows(slots))):
        assert [None if r is None else r.value for r in again] == [
            lines[from_file.statuses.place(*slot).line - 1] if slot in having else None for slot in slots
        ]


def test_a_line_longer_than_the_limit_is_refused_in_both_readers(tmp_path):
    value = campaign()
    line = canonical_line(row())
    results = ResultsDir(tmp_path / "r", value)
    results.append(line)
    # The limit counts the newline: a line of exactly the limit passes.
    assert read_results(results.path, max_line_bytes=len(line)).lines == 1
    assert results_of_bytes(value, line, max_line_bytes=len(line)).lines == 1
    for read in (
        lambda: read_results(results.path, max_line_bytes=len(line) - 1),
        lambda: results_of_bytes(value, line, max_line_bytes=len(line) - 1),
    ):
        with pytest.raises(ResultsError) as caught:
            read()
        assert caught.value.line == 1
        assert f"the line is longer than {len(line) - 1:,} bytes (the limit of one row" in str(caught.value)
    # Bytes with no end after the last newline: a torn line up to the limit, refused beyond it.
    results.append(b"x" * (len(line) - 1))
    assert read_results(results.path, max_line_bytes=len(line)).torn == b"x" * (len(line) - 1)
    results.append(b"x")
    with pytest.raises(ResultsError, match=f"episodes.jsonl:2: the line is longer than {len(line):,} bytes"):
        read_results(results.path, max_line_bytes=len(line))
    with pytest.raises(ResultsError, match=f"episodes.jsonl:2: the line is longer than {len(line):,} bytes"):
        results_of_bytes(value, results.episodes(), max_line_bytes=len(line))
    assert MAX_LINE_BYTES == 64 * 1024 * 1024


def test_campaign_json_over_its_limit_is_refused_without_reading_more(tmp_path):
    from ember.results import MAX_CAMPAIGN_BYTES

    results = ResultsDir(tmp_path / "r", campaign())
    with open(tmp_path / "r" / "campaign.json", "wb") as handle:
        handle.truncate(MAX_CAMPAIGN_BYTES + 1)  # sparse: no disk space
    with pytest.raises(ResultsError) as caught:
        read_results(results.path)
    assert (
        str(caught.value)
        == f"{results.path}/campaign.json: longer than 67,108,864 bytes (the limit, docs/campaigns.md)"
    )


def test_statistics_rules_are_a_hook_of_the_reader():
    value = campaign(seeds=(0, 1))
    good = canonical_line(row(seed=0)) + canonical_line(row(seed=1))
    assert results_of_bytes(value, good, rules=StatisticsRules()).lines == 2
    descending = campaign(seeds=(0, 1))
    descending["scenarios"][0]["seeds"] = [1, 0]
    assert results_of_bytes(descending, b"").lines == 0  # ranking.md accepts any order of distinct seeds
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(descending, b"", rules=StatisticsRules())
    assert str(caught.value) == (
        "campaign.json: $.scenarios[0].seeds[1]: expected seeds in strictly ascending order, got 0 after 1"
    )
    other = ok_row("p", hand_metrics("a", H1, 1, population=5))
    data = canonical_line(row(seed=0)) + canonical_line(other)
    assert results_of_bytes(value, data).lines == 2
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(value, data, rules=StatisticsRules())
    assert str(caught.value) == (
        "episodes.jsonl:2: $.metrics.safety.population: expected 4, the population of this scenario's ok row "
        "on line 1, got 5"
    )
