"""``ember report``: one self-contained HTML page for a campaign's results directory.

The page is built from the same two files as ``ranking.json`` (campaign.md
§4) and holds everything it shows: CSS, a small script (sortable tables)
and the plots as inline SVG.  Nothing is fetched when it is opened.
Needs the ``report`` extra (matplotlib).
"""

from ..ranking import ranking_of
from ..results import read_results, results_of_bytes, verifiable_note
from . import plots
from .data import collect
from .page import render_page

# The page's figures: (anchor, title, plot function, caption).
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


def build_report(campaign, episodes):
    """The report page (str) and the warnings, from parsed ``campaign.json`` and ``episodes.jsonl`` bytes.

    Raises ``RankingInputError`` for input that cannot be ranked and
    ``MissingExtraError`` without matplotlib.
    """
    plots.require()  # fail on a missing extra before any work
    results = results_of_bytes(campaign, episodes, keep_rows=True)
    return report_of(results), results.warnings


def report_of(results):
    """The report page (str) of checked ``Results`` read with ``keep_rows=True``."""
    plots.require()
    ranking = ranking_of(results)
    policies = [entry["policy"] for entry in ranking["ranked"]]
    figures = []
    views = {}
    if policies:
        views = collect(results.campaign, results.counting, policies)
        figures = [(name, title, plot(views, policies), caption) for name, title, plot, caption in _FIGURES]
    return render_page(results.campaign.value, ranking, views, figures, verifiable_note(results))


def report_of_directory(directory):
    """(The report page, its ``Results``) of a results directory; bad input is a ``ResultsError``."""
    plots.require()  # fail on a missing extra before any reading
    results = read_results(directory, keep_rows=True)
    return report_of(results), results
