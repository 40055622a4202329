"""``ember report``: one self-contained HTML page for a campaign's results directory.

The page is built from the same two files as ``ranking.json`` (campaign.md
§4) and holds everything it shows: CSS, a small script (sortable tables)
and the plots as inline SVG.  Nothing is fetched when it is opened.
Needs the ``report`` extra (matplotlib, and the stats extra for the statistics).
"""

from ..errors import MissingExtraError
from ..ranking import ranking_of
from ..results import RecordPresence, StatisticsRules, read_results, results_of_bytes
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
    results = results_of_bytes(campaign, episodes, keep_rows=True, rules=StatisticsRules())
    return report_of(results, replicates, seed, public_seeds), results.warnings


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


def report_of(results, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, public_seeds=True):
    """The report page (str) of checked ``Results`` read with ``keep_rows=True``.

    ``public_seeds``: the page says that a policy could have learned its seed
    from the fire (isolation.md §4).  A results directory lists its seeds in
    campaign.json and nothing in it says they were secret while the policies
    ran, so this is the default; a caller that knows they were (a board's
    hidden track) passes False.
    """
    _require(replicates, seed)
    ranking = ranking_of(results)
    statistics = statistics_of(results, replicates, seed, ranking=ranking)
    policies = [entry["policy"] for entry in ranking["ranked"]]
    figures = []
    views = {}
    if policies:
        views = collect(results.campaign, results.counting, policies)
        figures = [(name, title, plot(views, policies), caption) for name, title, plot, caption in _FIGURES]
    note = RecordPresence(results).note()
    return render_page(results.campaign.value, ranking, views, figures, note, statistics, public_seeds)


def report_of_directory(directory, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED):
    """(The report page, its ``Results``) of a results directory; bad input is a ``ResultsError``."""
    _require(replicates, seed)  # fail on a missing extra before any reading
    results = read_results(directory, keep_rows=True, rules=StatisticsRules())
    return report_of(results, replicates, seed), results
