"""The writer's rows (results/writer.py): ``append`` between ``start`` and ``end_rows``, the lock until ``close``."""

import pytest

from ember.errors import CampaignError
from ember.results import read_results
from ember.results.rows import failed_row
from ember.results.writer import ResultsWriter

from helpers.ranking_results import campaign_dict

H1 = "sha256:" + "1" * 64


def lost(seed):
    return failed_row(scenario_id="a", scenario_hash=H1, seed=seed, policy="p", error="worker lost")


def test_end_rows_closes_the_rows_and_keeps_the_lock(tmp_path):
    results = tmp_path / "res"
    store = ResultsWriter(results)
    store.lock()
    assert store.existing() is None
    with pytest.raises(ValueError, match="before start"):
        store.append(lost(0))
    store.prepare(campaign_dict("c", [("a", H1, "a.json", [0, 1])], [("p", "builtin", "greedy")]))
    store.start(b"", [])
    store.append(lost(0))
    store.end_rows()
    with pytest.raises(ValueError, match="after end_rows"):
        store.append(lost(1))
    other = ResultsWriter(results)
    with pytest.raises(CampaignError, match="locked"):
        other.lock()  # the run still holds the directory while it reads it back
    read = read_results(str(results))
    assert read.lines == 1 and read.statuses.get("p", (H1, 0)) == "failed" and read.statuses.get("p", (H1, 1)) is None
    store.end_rows()  # twice is harmless
    store.close()
    other.lock()
    other.close()
