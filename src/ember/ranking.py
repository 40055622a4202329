"""Ranking version 1.0 (ranking.md): a results directory's rows -> ``ranking.json``.

A pure function of a results directory's checked rows (``ember.results``,
which holds the input rules of ranking.md §1): no files, no clock, no
environment.  Every total is an
exact integer or ``Fraction``; each printed float is the correctly rounded
float of its exact rational, converted once, at the end.

Safety comes first (metrics.md §11): policies are ordered by the tuple
(casualties, stranded, person-time to safety, exposure), compared
lexicographically, so no amount of speed makes up for one more casualty.
"""

import itertools
from collections import Counter
from fractions import Fraction

from .canonical import canonical_json_reference
from .errors import MissingExtraError
from .results import EPISODES_FILE, OkRows, exposure_of, results_of_bytes
from .versions import METRICS_VERSION, RANKING_VERSION

FORMULA = (
    "sort ascending by (casualties, stranded, person_time_to_safety_total, exposure), "
    "each summed over the campaign's episodes; equal tuples share a rank"
)
__all__ = [
    "FORMULA",
    "compute_ranking",
    "format_leaderboard",
    "leaderboard_rows",
    "ranking_bytes",
    "ranking_of",
    "unranked_reason",
]


# --- the ranking -----------------------------------------------------------------------


def _float(value):
    """The correctly rounded float of an exact rational (int / Fraction)."""
    return float(Fraction(value))


class _Totals:
    """Sums of an ok policy's episode values over some episodes (all of K, or one scenario)."""

    def __init__(self):
        self.episodes = 0
        self.population = 0
        self.evacuated = 0
        self.casualties = 0
        self.stranded = 0
        self.time_to_safety = 0
        self.histogram = Counter()

    def add(self, episode):
        self.episodes += 1
        self.population += episode.population
        self.evacuated += episode.evacuated
        self.casualties += episode.casualties
        self.stranded += episode.stranded
        self.time_to_safety += episode.time_to_safety
        self.histogram.update(episode.histogram)

    def exposure(self):
        return exposure_of(self.histogram)


def _ranked_entry(name, kind, ok_rows, campaign):
    """The ``ranked`` entry of a policy whose counting rows are all ok (rank added later), and its order key."""
    total = _Totals()
    by_scenario = {}
    failed_before_ok = 0
    for scenario_hash, (scenario_id, seeds) in campaign.scenarios.items():
        part = _Totals()
        for seed in seeds:
            row = ok_rows[name, (scenario_hash, seed)]
            if row.previous:  # earlier rows exist, all failed (nothing follows an ok row)
                failed_before_ok += 1
            part.add(row.episode)
            total.add(row.episode)
        by_scenario[scenario_id] = {
            "episodes": part.episodes,
            "population": part.population,
            "evacuated": part.evacuated,
            "casualties": part.casualties,
            "stranded": part.stranded,
            "person_time_to_safety_total": part.time_to_safety,
            "exposure": _float(part.exposure()),
        }
    exposure = total.exposure()
    entry = {
        "policy": name,
        "kind": kind,
        "casualties": total.casualties,
        "stranded": total.stranded,
        "person_time_to_safety_total": total.time_to_safety,
        "exposure": _float(exposure),
        "population": total.population,
        "evacuated": total.evacuated,
        "casualty_rate": _float(Fraction(total.casualties, total.population)),
        "stranded_rate": _float(Fraction(total.stranded, total.population)),
        "evacuated_rate": _float(Fraction(total.evacuated, total.population)),
        "mean_person_time_to_safety": _float(Fraction(total.time_to_safety, total.population)),
        "failed_before_ok": failed_before_ok,
        "by_scenario": by_scenario,
    }
    return (total.casualties, total.stranded, total.time_to_safety, exposure), entry


def _pair(above, below, ok_rows, campaign):
    """ranking.md §4: how often, episode by episode, ``above`` is better, worse or equal."""
    tally = {"above_better": 0, "below_better": 0, "equal": 0}
    for key in campaign.keys:
        mine, theirs = ok_rows[above, key].episode, ok_rows[below, key].episode
        first, second = mine.counts_key(), theirs.counts_key()
        if first == second:  # the exact exposure only when it decides
            first, second = mine.exposure(), theirs.exposure()
        tally["above_better" if first < second else "below_better" if first > second else "equal"] += 1
    return {"above": above, "below": below, **tally}


def compute_ranking(campaign, episodes):
    """Ranking 1.0 of a results directory: returns (``ranking.json``'s dict, warnings).

    ``campaign`` is the parsed ``campaign.json``; ``episodes`` the raw bytes
    of ``episodes.jsonl``.  Raises ``ResultsError`` (naming the file and,
    for ``episodes.jsonl``, the 1-based line) on input ranking.md §1 refuses.
    Warnings (a torn last line) are returned, not printed.
    """
    ok_rows = OkRows()
    results = results_of_bytes(campaign, episodes, consumers=(ok_rows,))
    return ranking_of(results, ok_rows), results.warnings


def _kept_entry(name, kind, ok_rows, campaign, kept, fresh):
    """``_ranked_entry``, or the one of the last call when the policy's rows hold the very same episodes."""
    rows = [ok_rows[name, key] for key in campaign.keys]
    identity = (kind, [row.previous for row in rows], [row.episode for row in rows])
    found = kept.get(name)
    if (
        found is None
        or found[0][:2] != identity[:2]
        or len(found[0][2]) != len(rows)
        # The same objects, not equal ones: a reader given a ``CheckedLines`` hands an unchanged line's episode on.
        or any(old is not new for old, new in zip(found[0][2], identity[2]))
    ):
        found = (identity, _ranked_entry(name, kind, ok_rows, campaign))
    fresh[name] = found
    return found[1]


def ranking_of(results, ok_rows, kept=None):
    """Ranking 1.0 (``ranking.json``'s dict) of checked ``Results`` and their ``OkRows``.

    Both come from one reading: ``read_results(directory, consumers=(ok_rows,))``.  ``kept``: a dict the
    caller keeps from call to call (a board ranked again as rows arrive): each ranked policy's totals are
    kept in it and summed again only when its rows' episodes are not the ones of the last call.
    """
    resolved = results.campaign
    table = results.statuses
    scored, unranked, fresh = [], [], {}
    for name in sorted(resolved.policies):
        kind = resolved.policies[name]
        ok, failed = table.tally(name)  # counted in the table: no list of a status per episode of K
        if ok == len(resolved.keys):
            if kept is None:
                scored.append(_ranked_entry(name, kind, ok_rows, resolved))
            else:
                scored.append(_kept_entry(name, kind, ok_rows, resolved, kept, fresh))
        else:
            missing = len(resolved.keys) - ok - failed
            unranked.append({"policy": name, "kind": kind, "ok": ok, "failed": failed, "missing": missing})
    # Code-point order of names within a tuple: the sort is stable and ``scored`` is in name order.
    scored.sort(key=lambda pair: pair[0])
    ranked = []
    for position, (order, entry) in enumerate(scored):
        tied = position and order == scored[position - 1][0]
        ranked.append({"rank": ranked[-1]["rank"] if tied else position + 1, **entry})
    pairs = [_pair(above["policy"], below["policy"], ok_rows, resolved) for above, below in itertools.pairwise(ranked)]
    if kept is not None:
        kept.clear()
        kept.update(fresh)
    return {
        "ranking_version": RANKING_VERSION,
        "metrics_version": METRICS_VERSION,
        "campaign": resolved.name,
        "formula": FORMULA,
        "episodes": len(resolved.keys),
        "source": {"file": EPISODES_FILE, "sha256": results.episodes_sha256},
        "ranked": ranked,
        "pairs": pairs,
        "unranked": unranked,
    }


def ranking_bytes(ranking):
    """``ranking.json``'s bytes: canonical JSON (simulator.md §1) and one newline.

    The reference encoder, not orjson: orjson writes floats differently
    (``5e-5`` for ``json.dumps``'s ``5e-05``), and ranking.md fixes the latter.
    """
    return canonical_json_reference(ranking) + b"\n"


def write_ranking(directory, results=None, ok_rows=None):
    """Write ``directory``'s ``ranking.json`` (ranking.md §5) and return the ranking dict.

    ``results`` and ``ok_rows``: the directory's ``Results`` and ``OkRows``
    if already read together (else read here with ``read_results``).
    Written by the results writer: atomically, never through a symbolic
    link (``ResultsIOError`` naming the file).
    """
    from .files import write_file
    from .results import RANKING_FILE, read_results

    if results is None:
        ok_rows = OkRows()
        results = read_results(directory, consumers=(ok_rows,))
    ranking = ranking_of(results, ok_rows)
    write_file(directory, RANKING_FILE, ranking_bytes(ranking))
    return ranking


# --- leaderboard text ------------------------------------------------------------------

LEADERBOARD_FORMATS = ("table", "markdown")
_TABLE_STYLES = {"table": "simple", "markdown": "pipe"}
LEADERBOARD_COLUMNS = (
    "rank", "policy", "casualties", "stranded", "evacuated", "time to safety", "exposure",
)  # fmt: skip


def require_tabulate():
    """tabulate's function, or ``MissingExtraError`` naming the ``cli`` extra (text tables need it)."""
    try:
        from tabulate import tabulate
    except ImportError:
        raise MissingExtraError(
            "tables need tabulate: pip install 'ember-eval[cli]' (or pip install tabulate); --format json needs nothing"
        ) from None
    return tabulate


#: The columns of the distance to the possible (bounds.md §5), added when the directory has bounds.jsonl.
DISTANCE_COLUMNS = ("avoidable casualties", "evacuated of possible")


def leaderboard_rows(ranking, distance=None):
    """The leaderboard's cells, one list per ranked policy (strings and integers).

    ``distance``: each policy's ``ember.results.distance.Distance`` (bounds.md §5),
    whose two cells then end each row.
    """
    rows = []
    for entry in ranking["ranked"]:
        row = [
            entry["rank"],
            entry["policy"],
            entry["casualties"],
            entry["stranded"],
            f"{entry['evacuated']} of {entry['population']}",
            f"{entry['person_time_to_safety_total']} (mean {entry['mean_person_time_to_safety']:.2f})",
            f"{entry['exposure']:.4f}",
        ]
        if distance is not None:
            row += distance_cells(distance[entry["policy"]])
        rows.append(row)
    return rows


def distance_cells(distance):
    """A ``Distance``'s two cells: avoidable casualties and ``E/M (p%)``, with its episodes without a bound."""
    return [distance.avoidable_text(), distance.evacuated_text() + distance.note()]


def distance_sentence(distance):
    """What the two distance columns mean, said under a table that shows them."""
    sentence = (
        "Avoidable casualties: casualties minus the fewest any sequence of actions could have had; evacuated of "
        "possible: evacuated out of the most any could have evacuated (bounds.md, hindsight optima: no policy "
        "sees the seed)."
    )
    no_bound = sum(entry.no_bound for entry in distance.values())
    if no_bound:
        sentence += f" Episodes without a bound (bounds.md §3's limit) are left out of both: {no_bound} rows."
    return sentence


def unranked_reason(entry):
    """Why a policy is not ranked, in words (ranking.md §1)."""
    parts = [f"{entry[key]} {key}" for key in ("ok", "failed", "missing") if entry[key]]
    return f"not comparable on this campaign: {', '.join(parts)} of its episodes"


def format_leaderboard(ranking, fmt, distance=None):
    """A ``ranking.json`` dict as a plain-text (``"table"``) or Markdown (``"markdown"``) leaderboard.

    ``distance``: each policy's ``Distance`` (bounds.md §5) when the results
    have ``bounds.jsonl``: two more columns and a sentence saying what they are.
    Tables need the ``cli`` extra (tabulate); without it a ``MissingExtraError``
    says so.
    """
    if fmt not in _TABLE_STYLES:
        raise ValueError(f"format must be one of {', '.join(LEADERBOARD_FORMATS)}, got {fmt!r}")
    tabulate = require_tabulate()
    style = _TABLE_STYLES[fmt]
    markdown = fmt == "markdown"
    title = (
        f"Campaign {ranking['campaign']}: ranking {ranking['ranking_version']} over {ranking['episodes']} episodes "
        f"(metrics {ranking['metrics_version']})"
    )
    formula = f"Order: {ranking['formula']}."
    lines = [f"**{title}**" if markdown else title, "", formula, ""]
    if ranking["ranked"]:
        headers = LEADERBOARD_COLUMNS + (DISTANCE_COLUMNS if distance is not None else ())
        table = tabulate(
            leaderboard_rows(ranking, distance),
            headers=headers,
            tablefmt=style,
            disable_numparse=True,
            colalign=("right", "left") + ("right",) * (len(headers) - 2),
        )
        lines += [table, ""]
        if distance is not None:
            lines += [distance_sentence(distance), ""]
    else:
        lines += ["No policy has an ok row for every episode: nothing is ranked.", ""]
    if ranking["unranked"]:
        rows = [[entry["policy"], entry["kind"], unranked_reason(entry)] for entry in ranking["unranked"]]
        lines += ["Unranked:" if not markdown else "**Unranked**", ""]
        lines += [tabulate(rows, headers=("policy", "kind", "why"), tablefmt=style), ""]
    return "\n".join(lines)
