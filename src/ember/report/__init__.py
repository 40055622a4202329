"""``ember report``: one self-contained HTML page for a campaign's results directory.

The page is built from the same two files as ``ranking.json`` (campaign.md
§4) and holds everything it shows: CSS, a small script (sortable tables)
and the plots as inline SVG.  Nothing is fetched when it is opened.
Needs the ``report`` extra (matplotlib, and the stats extra for the statistics).
"""

from ..errors import MissingExtraError
from ..ranking import ranking_of
from ..results import OkRows, RecordPresence, StatisticsRules, read_results, results_of_bytes
from ..stats import DEFAULT_REPLICATES, DEFAULT_SEED, check_replicates, check_seed, statistics_of
from ..stats import require as require_statistics
from . import plots
from .data import collect
from .page import render_page

# The page's figures: (anchor, title, plot function, caption).
REPORT_EXTRA_HINT = "pip install 'ember-eval[report]'"

_FIGURES = (
    (
        "evacuation",
        "Evacuation curves",
        plots.evacuation_curves,
        "Cumulative share of each scenario's people evacuated by each step (from time.evacuation_steps). "
        "Line: mean over seeds; band: lowest to highest seed.",
    ),
    (
        "casualties",
        "Casualties",
        plots.casualties,
        "Casualties as a share of the people, per scenario. Bar: mean over seeds; dots: one per seed.",
    ),
    (
        "exits",
        "Exit shares",
        plots.exit_shares,
        "Each exit's share of an episode's evacuations (episodes with no evacuee left out). "
        "Bar: mean over seeds; dots: one per seed.",
    ),
    (
        "fire",
        "Fire distance",
        plots.fire_distances,
        "Share of active person-states at each Manhattan distance d from the nearest burning cell "
        "(fire_exposure.distance_histogram; only states with fire). Line: pooled over seeds; "
        "band: lowest to highest seed. Close to the left means close to the fire.",
    ),
)


def build_report(campaign, episodes, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, public_seeds=True):
    """The report page (str) and the warnings, from parsed ``campaign.json`` and ``episodes.jsonl`` bytes.

    The page shows the ranking and its statistics (statistics.md, ``replicates``
    resamples from stream seed ``seed``), so the rows are read with
    statistics.md §1's rules too.  Raises ``ResultsError`` for input either
    refuses, ``StatisticsParameterError`` for B or the seed, and
    ``MissingExtraError`` without matplotlib, numpy or scipy.
    ``public_seeds``: as ``report_of``.
    """
    _require(replicates, seed)
    ok_rows = OkRows()
    results = results_of_bytes(campaign, episodes, rules=StatisticsRules(), consumers=(ok_rows,))
    return report_of(results, ok_rows, replicates, seed, public_seeds), results.warnings


def _require(replicates, seed):
    """B, the seed and the extras, checked before any reading."""
    check_replicates(replicates)
    check_seed(seed)
    plots.require()
    try:
        require_statistics()
    except MissingExtraError:
        raise MissingExtraError(
            f"the report's statistics need numpy, scipy and threadpoolctl: {REPORT_EXTRA_HINT}"
        ) from None


def report_of(results, ok_rows, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, public_seeds=True, bounds=None):
    """The report page (str) of checked ``Results`` and their ``OkRows`` (one reading).

    The ranked policies' rows are read again one at a time for the plots
    (``data.collect``): the page holds the statistics' inputs and the
    plots' per-seed numbers and curves, never the rows.

    ``public_seeds``: the page says that a policy could have learned its seed
    from the fire (isolation.md §4).  A results directory lists its seeds in
    campaign.json and nothing in it says they were secret while the policies
    ran, so this is the default; a caller that knows they were (a board's
    hidden track) passes False.  ``bounds``: each key's ``KeyBounds``
    (``ember.results.bounds_file.read_bounds``), when known: the page then shows the
    distance to the possible (bounds.md §5) and plots it.
    """
    _require(replicates, seed)
    ranking = ranking_of(results, ok_rows)
    statistics = statistics_of(results, ok_rows, replicates, seed, ranking=ranking)
    policies = [entry["policy"] for entry in ranking["ranked"]]
    data = collect(results, ok_rows, policies) if policies else None
    return report_page(results, ok_rows, ranking, statistics, data, public_seeds, bounds)


POSSIBLE_FIGURE = (
    "possible",
    "Evacuated against the possible",
    "Each policy's evacuations summed over a scenario's seeds (bar), against the most any sequence of actions "
    "could have evacuated on the same episodes (black line: evacuated_max, bounds.md; episodes without a bound "
    "left out of both).",
)


def figures_of(data, policies, distances=None):
    """The report's figures of ``policies`` (ranked ones, in leaderboard order) from their ``PlotData``:
    (anchor, title, svg text, caption) tuples; with ``distances``, the distance to the possible too."""
    figures = [(name, title, plot(data, policies), caption) for name, title, plot, caption in _FIGURES]
    if distances is not None:
        name, title, caption = POSSIBLE_FIGURE
        figures.append((name, title, plots.possible(list(data.episodes), policies, distances), caption))
    return figures


def report_page(results, ok_rows, ranking, statistics, data, public_seeds=True, bounds=None):
    """The page of ``Results`` and ``OkRows``, their ranking and statistics, and the ``PlotData``.

    ``data`` is None when nothing is ranked; ``public_seeds`` and ``bounds`` as ``report_of``.
    """
    from ..results.distance import Distances

    policies = [entry["policy"] for entry in ranking["ranked"]]
    distances = None if bounds is None else Distances(ok_rows, bounds)
    figures = []
    episodes = {}
    if data is not None:
        episodes = data.episodes
        figures = figures_of(data, policies, distances)
    note = RecordPresence(results, ok_rows).note()
    return render_page(
        results.campaign.value, ranking, episodes, figures, note, statistics, public_seeds, distances=distances
    )


def report_of_directory(directory, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED):
    """(The report page, its ``Results``) of a results directory; bad input is a ``ResultsError``.

    With ``bounds.jsonl`` in the directory the page shows the distance to the possible (bounds.md §5).
    """
    from ..results.bounds_file import read_bounds

    _require(replicates, seed)  # fail on a missing extra before any reading
    ok_rows = OkRows()
    results = read_results(directory, rules=StatisticsRules(), consumers=(ok_rows,))
    bounds = read_bounds(directory, results.campaign)
    return report_of(results, ok_rows, replicates, seed, bounds=bounds), results
