"""What the writer does with the directory a run finds, before its first row (results/writer.py).

One writer at a time (the lock); a line that is not a row refused with
nothing written; a torn last line set aside in ``episodes.jsonl.torn``
and its row run again; the derived files of an earlier run removed.
"""

import os

from helpers.campaigns import (
    BASIC,
    assert_one_line_error,
    ember_cli,
    read_rows,
    snapshot,
    without_timing,
    write_campaign,
)


def test_one_writer_per_results_directory(tmp_path):
    import fcntl

    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    results.mkdir()
    fd = os.open(results, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running 'ember evaluate' holds it
        line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
        assert "locked" in line
        assert snapshot(results) == {}
    finally:
        os.close(fd)
    assert ember_cli("evaluate", path, "-o", results).returncode == 0


def test_a_line_that_is_not_a_row_is_refused(basic_copy):
    path, results = basic_copy
    with open(results / "episodes.jsonl", "ab") as handle:
        handle.write(b'{"not": "a row"}\n')
    before = snapshot(results)
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
    assert "episodes.jsonl:7: $: a row has exactly the keys" in line  # the one schema (ember.results)
    assert snapshot(results) == before


def test_a_torn_last_line_is_set_aside_with_a_warning(basic_copy):
    path, results = basic_copy
    rows = read_rows(results)
    # Simulate a crash mid-write: the last row lost, half of it on disk.
    full = (results / "episodes.jsonl").read_bytes()
    last = full[:-1].rsplit(b"\n", 1)[1] + b"\n"
    torn = last[: len(last) // 2]
    (results / "episodes.jsonl").write_bytes(full[: -len(last)] + torn)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stderr.decode() and "episodes.jsonl.torn" in done.stderr.decode()
    assert (results / "episodes.jsonl.torn").read_bytes() == torn
    after = read_rows(results)
    assert after[:-1] == rows[:-1]
    assert without_timing(after) == without_timing(rows)  # the lost row was run again, once


def test_a_run_removes_a_stale_statistics_json_as_it_does_ranking_json(basic_copy):
    """statistics.json (ember stats -o) describes the rows of the last run: evaluate drops it at the start."""
    path, results = basic_copy
    stats = ember_cli("stats", results, "--replicates", "1000", "-o", results / "statistics.json")
    assert stats.returncode == 0, stats.stderr
    (results / "ranking.json").write_bytes(b"stale\n")
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert not (results / "statistics.json").exists()
    assert (results / "ranking.json").read_bytes() == ember_cli("rank", results).stdout  # written anew
