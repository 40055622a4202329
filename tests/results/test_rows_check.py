"""The check of a row every reader makes (results/rows.py ``check_row``, campaign.md §4, ranking.md §1).

A line that is not a row is refused with the reason (a JSON path, what was
expected, what was found), the file and its line.
"""

import pytest

from ember.results import OkRows, results_of_bytes

from helpers.ranking_results import canonical_line
from helpers.results_lines import H1, campaign, refused, row


# Lines a reader meets that are no row, each with its reason, the same for every reader.
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


def test_a_record_path_may_leave_the_folder_it_is_relative_to():
    """A records entry's path is relative to the campaign file's folder, which it may leave (../subs)."""
    kept = row(record="../subs/a/0.record", record_sha256="a" * 64)
    ok_rows = OkRows()
    results_of_bytes(campaign(), canonical_line(kept), consumers=(ok_rows,))
    assert ok_rows[("p", (H1, 0))].record == "../subs/a/0.record"
