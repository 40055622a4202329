"""``ember report``: one self-contained HTML page for a campaign's results directory.

The page is built from the same two files as ``ranking.json`` (campaign.md
§4) and holds everything it shows: CSS, a small script (sortable tables)
and the plots as inline SVG.  Nothing is fetched when it is opened.
Needs the ``report`` extra (matplotlib, and numpy and scipy for the statistics).
"""

from ..errors import MissingExtraError
from ..ranking import ranking_from_rows
from ..stats import DEFAULT_REPLICATES, DEFAULT_SEED, check_replicates, check_seed, checked_rows, statistics_from_rows
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


def build_report(campaign, episodes, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED):
    """The report page (str) and the warnings, from parsed ``campaign.json`` and ``episodes.jsonl`` bytes.

    The page shows the ranking and its statistics (statistics.md, ``replicates``
    resamples from stream seed ``seed``).  The rows are read once, with the
    checks of ranking.md and statistics.md §1.  Raises ``RankingInputError``
    (or ``StatisticsInputError``) for input either refuses,
    ``StatisticsParameterError`` for B or the seed, and ``MissingExtraError``
    without matplotlib, numpy or scipy.
    """
    check_replicates(replicates)
    check_seed(seed)
    plots.require()  # fail on a missing extra before any work
    try:
        require_statistics()
    except MissingExtraError:
        raise MissingExtraError(f"the report's statistics need numpy and scipy: {REPORT_EXTRA_HINT}") from None
    resolved, counting, warnings = checked_rows(campaign, episodes, keep_metrics=True)
    ranking = ranking_from_rows(resolved, counting, episodes)
    statistics = statistics_from_rows(resolved, counting, ranking, replicates, seed)
    policies = [entry["policy"] for entry in ranking["ranked"]]
    figures = []
    if policies:
        views = collect(resolved, counting, policies)
        del counting
        figures = [(name, title, plot(views, policies), caption) for name, title, plot, caption in _FIGURES]
    else:
        views = {}
    return render_page(campaign, ranking, views, figures, statistics), warnings
