"""``ember export`` streamed (ember.results.export): a row at a time, the same bytes as the CSV computed whole."""

import pytest

from ember.errors import ResultsError
from ember.results import export as export_module
from ember.results.export import export_chunks, export_csv

from helpers.results_dirs import in_process
from helpers.shuffled_results import csv_whole, shuffled_results


@pytest.mark.parametrize("seed", range(3))
def test_the_streamed_csv_is_the_csv_computed_whole(tmp_path, seed, monkeypatch):
    results = shuffled_results(tmp_path / "r", seed)
    expected = csv_whole(results.campaign, results.episodes())
    assert b",stay,failed,agent exited" in expected  # unranked and failed counting rows are exported too
    whole = b"".join(export_chunks(results.path))
    assert whole == expected
    # In pieces of any size (here about 2,000 characters: many), the same bytes.
    monkeypatch.setattr(export_module, "CHUNK_CHARS", 2000)
    pieces = list(export_chunks(results.path))
    assert len(pieces) > 5 and all(type(piece) is bytes for piece in pieces)
    assert b"".join(pieces) == expected
    assert export_csv(results.path) == expected.decode("utf-8")


def test_ember_export_writes_the_same_bytes_to_stdout_and_to_a_file(tmp_path, monkeypatch):
    results = shuffled_results(tmp_path / "r", 7)
    expected = csv_whole(results.campaign, results.episodes())
    monkeypatch.setattr(export_module, "CHUNK_CHARS", 1000)
    code, out, err = in_process("export", results.path)
    assert (code, out, err) == (0, expected.decode("utf-8"), "")
    target = tmp_path / "rows.csv"
    assert in_process("export", results.path, "-o", target) == (0, "", "")
    assert target.read_bytes() == expected


def test_a_row_changed_after_the_check_is_named(tmp_path):
    """The second reading finds a line that is no longer the row that was checked: a one-line error, its line."""
    results = shuffled_results(tmp_path / "r", 1)
    pieces = export_chunks(results.path)
    data = results.episodes()
    last = data.rindex(b"\n", 0, len(data) - 1) + 1  # the last row: a counting row, read again
    with open(results.episodes_path, "r+b") as handle:
        handle.seek(last)
        handle.write(b" " * (len(data) - 1 - last))  # blank now, its length unchanged
    with pytest.raises(ResultsError) as caught:
        b"".join(pieces)
    lines = data.count(b"\n")
    assert str(caught.value).startswith(f"{results.path}/episodes.jsonl:{lines}: ")
    assert str(caught.value).endswith("the line changed while it was read (is an 'ember evaluate' rewriting it?)")
