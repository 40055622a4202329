"""``ember report`` streamed (ember.report.data): rows read again one at a time, the page of the rows held whole.

The plots' numbers are computed from a row at a time (an ``EvacuationBand``
per scenario and policy instead of a matrix of every seed's curve); they
must be the numbers of the matrix bit for bit, and the page its bytes.
"""

import numpy as np
import pytest

from ember.ranking import ranking_of
from ember.report import build_report, report_of_directory, report_page
from ember.report.data import EpisodeView, EvacuationBand, SeedView, collect, evacuation_curve
from ember.results import EpisodeOutcome, OkRows, StatisticsRules, read_results
from ember.stats import statistics_of

from helpers.ranking_results import hand_metrics
from helpers.shuffled_results import RANKED, MatrixBand, plot_data_whole, shuffled_results

H1 = "sha256:" + "1" * 64


def same_array(a, b):
    return type(a) is type(b) is np.ndarray and a.dtype == b.dtype == np.float64 and np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(3))
def test_the_plot_numbers_are_those_of_every_row_held_whole(tmp_path, seed):
    results_dir = shuffled_results(tmp_path / "r", seed)
    ok_rows = OkRows()
    results = read_results(results_dir.path, rules=StatisticsRules(), consumers=(ok_rows,))
    assert sorted(e["policy"] for e in ranking_of(results, ok_rows)["ranked"]) == sorted(RANKED)
    streamed = collect(results, ok_rows, RANKED)
    whole = plot_data_whole(results_dir.campaign, results_dir.episodes(), RANKED)
    assert list(streamed.episodes) == list(whole.episodes) == ["hall", "room", "still"]
    for scenario_id, by_policy in whole.episodes.items():
        horizon = max(band.horizon for band in whole.evacuation[scenario_id].values())
        assert max(band.horizon for band in streamed.evacuation[scenario_id].values()) == horizon
        assert (horizon == 0) == (scenario_id == "still")
        for policy in RANKED:
            mine, theirs = streamed.evacuation[scenario_id][policy], whole.evacuation[scenario_id][policy]
            for a, b in zip(mine.curves(horizon), theirs.curves(horizon), strict=True):
                assert same_array(a, b), (scenario_id, policy)
            for a, b in zip(streamed.episodes[scenario_id][policy], by_policy[policy], strict=True):
                assert type(a) is SeedView
                assert {name: getattr(a, name) for name in SeedView.__slots__} == {
                    name: getattr(b, name) for name in SeedView.__slots__
                }


def test_a_band_is_the_matrix_bit_for_bit_where_the_order_of_the_sums_shows():
    """Many seeds, shares of 7ths, horizons that grow and shrink seed by seed: sums in another order would differ."""
    import random

    draw = random.Random(5)
    views = []
    for seed in range(300):
        steps = draw.randrange(0, 30)
        evacuation_steps = {f"p{i}": draw.randrange(0, steps + 1) for i in range(draw.randrange(0, 8))}
        metrics = hand_metrics(
            "s", H1, seed, population=7, stranded=7 - len(evacuation_steps), evacuation_steps=evacuation_steps
        )
        metrics["time"]["episode_steps"] = steps
        views.append(EpisodeView(seed, EpisodeOutcome(metrics), metrics))
    band = EvacuationBand()
    for view in views:
        band.add(view)
    matrix = MatrixBand(views)
    assert band.horizon == matrix.horizon
    for horizon in (matrix.horizon, matrix.horizon + 5):
        for a, b in zip(band.curves(horizon), matrix.curves(horizon), strict=True):
            assert same_array(a, b)
    # The same shares summed in another order give another float somewhere: the order is what is tested.
    shares = np.array([evacuation_curve(view, matrix.horizon) for view in views])
    assert not np.array_equal(np.sort(shares, axis=0).sum(axis=0), shares.sum(axis=0))


def test_the_streamed_page_is_the_page_of_the_rows_held_whole(tmp_path):
    results_dir = shuffled_results(tmp_path / "r", 11)
    ok_rows = OkRows()
    results = read_results(results_dir.path, rules=StatisticsRules(), consumers=(ok_rows,))
    ranking = ranking_of(results, ok_rows)
    statistics = statistics_of(results, ok_rows, 1000, 3, ranking=ranking)
    policies = [entry["policy"] for entry in ranking["ranked"]]
    whole = plot_data_whole(results_dir.campaign, results_dir.episodes(), policies)
    expected = report_page(results, ok_rows, ranking, statistics, whole)
    page, warnings = build_report(results_dir.campaign, results_dir.episodes(), 1000, 3)
    assert warnings == [] and page == expected
    assert report_of_directory(results_dir.path, 1000, 3)[0] == expected
    assert page.count("<svg") == 4 and "stay" in page
