"""Statistics version 1.0 (statistics.md): a results directory's rows -> ``statistics.json``.

Built on the ranking of the same rows (ranking.md §1–3, computed by
``ember.ranking``): the ranked set, the order, the point values and the
pairwise counts are the ranking's own; this module adds what the
stratified paired bootstrap, the sign test and Clopper–Pearson say about
them.  A pure function of ``campaign.json`` (parsed), the bytes of
``episodes.jsonl``, B and σ: the same inputs give the same bytes on every
machine (integers are exact, every float is rounded once from an exact
value, and the resampling stream is SplitMix64 on unsigned 64-bit integers).
"""

from fractions import Fraction

from ..canonical import canonical_json_reference
from ..errors import MissingExtraError, ResultsError, StatisticsParameterError
from ..ranking import ranking_of
from ..results import CAMPAIGN_FILE, EPISODES_FILE, OkRows, StatisticsRules, read_results, results_of_bytes
from ..versions import STATISTICS_VERSION
from .sign_test import sign_test_p_value

METHOD = "stratified paired bootstrap over episode keys, scenarios as strata; 95% percentile intervals"
DEFAULT_REPLICATES = 10_000
MIN_REPLICATES = 1_000
MAX_REPLICATES = 1_000_000
DEFAULT_SEED = 0
SEED_LIMIT = 1 << 64
#: Scenarios with fewer seeds than this are listed in ``few_seed_scenarios`` (statistics.md §7).
FEW_SEEDS = 10
STATS_EXTRA_HINT = "pip install 'ember-eval[stats]'"
#: (statistics.json field, ranking.json field, replicate totals) of the four totals of statistics.md §5.
TOTALS = (
    ("casualties", "casualties", "casualties"),
    ("stranded", "stranded", "stranded"),
    ("evacuated", "evacuated", "evacuated"),
    ("person_time_to_safety_total", "person_time_to_safety_total", "person_time"),
)
DIFFERENCES = (
    ("casualties_difference", "casualties", "casualties"),
    ("stranded_difference", "stranded", "stranded"),
    ("person_time_difference", "person_time_to_safety_total", "person_time"),
)


# --- parameters (statistics.md §3) ----------------------------------------------------


def check_replicates(replicates):
    """B: an ``int`` (not a ``bool``) with 1000 <= B <= 1000000; else ``StatisticsParameterError``."""
    if type(replicates) is not int or not MIN_REPLICATES <= replicates <= MAX_REPLICATES:
        raise StatisticsParameterError(
            f"replicates: expected an integer {MIN_REPLICATES} <= B <= {MAX_REPLICATES}, got {replicates!r}"
        )
    return replicates


def check_seed(seed):
    """σ: an ``int`` (not a ``bool``) with 0 <= σ < 2^64; else ``StatisticsParameterError``."""
    if type(seed) is not int or not 0 <= seed < SEED_LIMIT:
        raise StatisticsParameterError(f"seed: expected an integer 0 <= seed < 2^64, got {seed!r}")
    return seed


# --- further input rules (statistics.md §1) ---------------------------------------------


def check_statistics_rules(results, ok_rows):
    """statistics.md §1's further rules on ``Results`` and their ``OkRows`` however they were read.

    A read with ``rules=StatisticsRules()`` has already refused what breaks
    them, at the first bad line; this makes ``statistics_of`` safe on any
    ``Results``, with the same messages.
    """
    rules = StatisticsRules()
    reason = rules.check_campaign(results.campaign)
    if reason is not None:
        raise ResultsError(CAMPAIGN_FILE, None, reason, results.directory)
    for row in ok_rows.rows():
        reason = rules.check_row(row, None)
        if reason is not None:
            raise ResultsError(EPISODES_FILE, row.line, reason, results.directory)


# --- numerics (the stats extra) ---------------------------------------------------------


def require():
    """numpy, scipy and threadpoolctl, or ``MissingExtraError`` naming the ``stats`` extra."""
    try:
        import numpy  # noqa: F401
        import scipy.sparse  # noqa: F401
        import scipy.special  # noqa: F401
        import threadpoolctl  # noqa: F401
    except ImportError:
        raise MissingExtraError(f"statistics need numpy, scipy and threadpoolctl: {STATS_EXTRA_HINT}") from None


def percentile_bounds(replicates):
    """(lo, hi) = (⌊B/40⌋, B − 1 − ⌊B/40⌋): the sorted positions of a 95% interval's ends (statistics.md §4)."""
    return replicates // 40, replicates - 1 - replicates // 40


def percentile_intervals(values, in_place=False):
    """[v[lo], v[hi]] of the sorted replicate values along axis 0, for every other index: shape (2, ...).

    Partitioning puts exactly the sorted values at positions lo and hi (an
    exact order statistic, not an interpolated quantile).  ``in_place``
    reorders ``values`` itself (each column independently) instead of a copy.
    """
    import numpy as np

    lo, hi = percentile_bounds(len(values))
    if not in_place:
        return np.partition(values, (lo, hi), axis=0)[[lo, hi]]
    values.partition((lo, hi), axis=0)
    return values[[lo, hi]]


def _int_interval(bounds):
    return [int(bounds[0]), int(bounds[1])]


# --- statistics.json --------------------------------------------------------------------


def _episode_values(resolved, ok_rows, policies):
    """|K| × |P| object arrays of c, s, p, e (Python ints) and a function giving float(x) (statistics.md §1)."""
    import numpy as np

    rows = [[ok_rows[name, key].episode for name in policies] for key in resolved.keys]
    fields = {
        "casualties": "casualties",
        "stranded": "stranded",
        "person_time": "time_to_safety",
        "evacuated": "evacuated",
    }
    values = {}
    for name, field in fields.items():
        array = np.empty((len(rows), len(policies)), dtype=object)
        array[:] = [[getattr(episode, field) for episode in row] for row in rows]
        values[name] = array

    def exposures():
        array = np.empty((len(rows), len(policies)), dtype=object)
        array[:] = [[float(episode.exposure()) for episode in row] for row in rows]
        return array

    return rows, values, exposures


def _share(count, replicates):
    return count / replicates  # int / int: correctly rounded


def _policy_entry(entry, j, rank_count, replicates, bounds, population, episodes, rows, scenario_ids):
    from .clopper_pearson import clopper_pearson

    result = {"policy": entry["policy"], "rank": entry["rank"]}
    for field, ranking_field, name in TOTALS:
        result[field] = {"total": entry[ranking_field], "interval": _int_interval(bounds[name][:, j])}
    for field, total in (("casualty_rate", "casualties"), ("stranded_rate", "stranded")):
        low, high = bounds[total][:, j]
        result[field] = {
            "value": float(Fraction(entry[total], population)),
            "interval": [float(Fraction(int(low), population)), float(Fraction(int(high), population))],
        }
    result["rank_interval"] = _int_interval(bounds["ranks"][:, j])
    result["rank_share"] = _share(rank_count, replicates)
    casualties = sum(1 for row in rows if row[j].casualties >= 1)
    losses = sum(1 for row in rows if row[j].casualties + row[j].stranded >= 1)
    for field, count in (("episodes_with_casualties", casualties), ("episodes_with_loss", losses)):
        result[field] = {"count": count, "of": episodes, "interval": clopper_pearson(count, episodes)}
    result["by_scenario"] = {
        scenario_id: {
            "casualties": {
                "total": entry["by_scenario"][scenario_id]["casualties"],
                "interval": _int_interval(bounds["stratum_casualties"][:, h, j]),
            }
        }
        for h, scenario_id in enumerate(scenario_ids)
    }
    return result


def _pair_entry(j, above, below, ranking_pair, samples, replicates):
    result = {"above": above["policy"], "below": below["policy"]}
    for field, ranking_field, name in DIFFERENCES:
        difference = samples.totals[name][:, j + 1] - samples.totals[name][:, j]
        result[field] = {
            "value": below[ranking_field] - above[ranking_field],
            "interval": _int_interval(percentile_intervals(difference, in_place=True)),
        }
    above_count, equal_count, below_count = (int(n) for n in samples.orders[j])
    result["order"] = {
        "above": _share(above_count, replicates),
        "equal": _share(equal_count, replicates),
        "below": _share(below_count, replicates),
    }
    result["separated"] = above["rank"] != below["rank"] and above_count >= replicates - replicates // 40
    m, n = ranking_pair["above_better"], ranking_pair["below_better"]
    result["sign_test"] = {"above_better": m, "below_better": n, "p_value": sign_test_p_value(m, n)}
    return result


def statistics_of(results, ok_rows, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, progress=None, ranking=None):
    """``statistics.json``'s dict of checked ``Results`` and their ``OkRows``, B = ``replicates``, σ = ``seed``.

    ``ranking`` is ``ranking_of(results, ok_rows)`` when the caller has it already.
    ``progress(done)`` is called as blocks of replicates finish.  Raises
    ``StatisticsParameterError``, ``MissingExtraError`` and ``ResultsError``
    (statistics.md §1's further rules) before any resampling.
    """
    check_replicates(replicates)
    check_seed(seed)
    require()
    check_statistics_rules(results, ok_rows)
    if ranking is None:
        ranking = ranking_of(results, ok_rows)
    return _statistics(results.campaign, ok_rows, ranking, replicates, seed, progress)


def _statistics(resolved, ok_rows, ranking, replicates, seed, progress):
    from .bootstrap import resample

    ranked = ranking["ranked"]
    policies = [entry["policy"] for entry in ranked]
    scenario_ids = [scenario_id for scenario_id, _ in resolved.scenarios.values()]
    sizes = [len(seeds) for _, seeds in resolved.scenarios.values()]
    episodes = len(resolved.keys)
    policy_entries, pair_entries = [], []
    if ranked:
        rows, values, exposures = _episode_values(resolved, ok_rows, policies)
        samples = resample(values, exposures, sizes, replicates, seed, progress)
        # Pairs first: their differences need each replicate's totals side by side; then every
        # interval partitions the replicate values in place (no copy of the arrays that grow with B).
        for j, ranking_pair in enumerate(ranking["pairs"]):
            pair = _pair_entry(j, ranked[j], ranked[j + 1], ranking_pair, samples, replicates)
            pair_entries.append(pair)
        rank_counts = [int((samples.ranks[:, j] == entry["rank"]).sum()) for j, entry in enumerate(ranked)]
        bounds = {name: percentile_intervals(samples.totals[name], in_place=True) for name in samples.totals}
        bounds["ranks"] = percentile_intervals(samples.ranks, in_place=True)
        bounds["stratum_casualties"] = percentile_intervals(samples.stratum_casualties, in_place=True)
        population = ranked[0]["population"]  # one N for every ranked policy (statistics.md §1, StatisticsRules)
        for j, entry in enumerate(ranked):
            policy_entries.append(
                _policy_entry(entry, j, rank_counts[j], replicates, bounds, population, episodes, rows, scenario_ids)
            )
        group = 1
        for j, entry in enumerate(policy_entries):
            if j and pair_entries[j - 1]["separated"]:
                group += 1
            entry["group"] = group
    return {
        "statistics_version": STATISTICS_VERSION,
        "ranking_version": ranking["ranking_version"],
        "metrics_version": ranking["metrics_version"],
        "campaign": ranking["campaign"],
        "episodes": episodes,
        "source": ranking["source"],
        "method": METHOD,
        "replicates": replicates,
        "seed": seed,
        "few_seed_scenarios": [
            {"scenario_id": scenario_id, "seeds": n} for scenario_id, n in zip(scenario_ids, sizes) if n < FEW_SEEDS
        ],
        "policies": policy_entries,
        "pairs": pair_entries,
        "unranked": [entry["policy"] for entry in ranking["unranked"]],
    }


def compute_statistics(campaign, episodes, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, progress=None):
    """Statistics 1.0 of a results directory's two files: returns (``statistics.json``'s dict, warnings).

    ``campaign`` is the parsed ``campaign.json``; ``episodes`` the raw bytes
    of ``episodes.jsonl``; ``replicates`` (B) and ``seed`` (σ) ints as
    statistics.md §3 says.  Raises ``StatisticsParameterError`` for B or σ,
    ``MissingExtraError`` without the ``stats`` extra, ``ResultsError`` for input
    ranking.md §1 or statistics.md §1 refuses, each before any resampling.
    Warnings (a torn last line) are returned, not printed.
    """
    check_replicates(replicates)
    check_seed(seed)
    require()
    ok_rows = OkRows()
    results = results_of_bytes(campaign, episodes, rules=StatisticsRules(), consumers=(ok_rows,))
    return statistics_of(results, ok_rows, replicates, seed, progress), results.warnings


def statistics_of_directory(directory, replicates=DEFAULT_REPLICATES, seed=DEFAULT_SEED, progress=None):
    """(``statistics.json``'s dict, the ``Results`` and ``OkRows`` read) of a results directory (``ember.results``)."""
    check_replicates(replicates)
    check_seed(seed)
    require()  # a missing extra fails before the files are read
    ok_rows = OkRows()
    results = read_results(directory, rules=StatisticsRules(), consumers=(ok_rows,))
    return statistics_of(results, ok_rows, replicates, seed, progress), results, ok_rows


def statistics_bytes(statistics):
    """``statistics.json``'s bytes: canonical JSON (the reference encoder, as ``ranking.json``) and one newline."""
    return canonical_json_reference(statistics) + b"\n"
