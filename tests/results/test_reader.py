"""The strict reader of a results directory (results/reader.py): files and bytes alike, its limits, its error.

(``tests/results/test_readers.py`` holds what every command reading a
directory refuses alike.)
"""

import hashlib
import json

import pytest

from ember import errors
from ember.errors import EmberError, ResultsError
from ember.results import MAX_LINE_BYTES, read_results, results_of_bytes

from helpers.ranking_results import ResultsDir, canonical_line, failed_row
from helpers.results_lines import H1, campaign, row


def test_one_error_class_under_one_name():
    assert not hasattr(errors, "RankingInputError")
    error = ResultsError("episodes.jsonl", 3, "why", "some/dir")
    assert isinstance(error, EmberError) and isinstance(error, ValueError)
    assert str(error) == "some/dir/episodes.jsonl:3: why"
    assert (error.file, error.line, error.reason, error.directory) == ("episodes.jsonl", 3, "why", "some/dir")
    assert str(ResultsError(".", None, "no such directory", "x/")) == "x: no such directory"
    assert str(ResultsError("campaign.json", None, "bad")) == "campaign.json: bad"


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
