"""Statistics in words and text tables: ``ember stats --format table|markdown`` and the report's sentences.

Everything here reads a ``statistics.json`` dict and nothing else; the
official numbers are the JSON ones.  Shares are written so that they never
round to 100% or 0% unless they are exactly that.
"""

import math
from fractions import Fraction

from .compute import FEW_SEEDS

STATISTICS_FORMATS = ("table", "markdown")
_TABLE_STYLES = {"table": "simple", "markdown": "pipe"}
POLICY_COLUMNS = (
    "rank", "rank 95%", "rank share", "group", "policy", "casualties", "stranded", "evacuated",
    "time to safety", "episodes with casualties",
)  # fmt: skip
PAIR_COLUMNS = (
    "above", "below", "above / equal / below", "separated", "Δ casualties", "Δ stranded", "Δ time to safety",
    "sign test",
)  # fmt: skip


def percent(share):
    """A share in [0, 1] as a percentage: at most one decimal, never rounded to 0% or 100% unless exact."""
    if share == 1:
        return "100%"
    if share == 0:
        return "0%"
    text = f"{100 * share:.1f}".rstrip("0").rstrip(".")
    if text == "100":
        return ">99.9%"
    if text == "0":
        return "<0.1%"
    return f"{text}%"


def interval_text(interval):
    """``[8, 17]`` for an interval of counts, ``[0.3%, 9.7%]`` for one of shares (``share_interval_text``)."""
    low, high = interval
    return f"[{low:,}, {high:,}]" if isinstance(low, int) else share_interval_text(interval)


def share_interval_text(interval):
    """An interval of shares in percent to one decimal, rounded outward (the low end down, the high end up).

    The printed interval always contains the exact one, as statistics.md rounds Clopper–Pearson
    outward; an end that is exactly 0 or 1 is ``0%`` or ``100%``, so ``0.0%`` or ``100.0%`` is an end
    within a tenth of a percent of them, not at them.
    """
    low, high = interval
    return f"[{_percent_end(low, math.floor)}, {_percent_end(high, math.ceil)}]"


def _percent_end(share, rounding):
    if share == 0:
        return "0%"
    if share == 1:
        return "100%"
    tenths = rounding(Fraction(share) * 1000)  # the float exactly: no rounding before this one
    return f"{tenths // 10}.{tenths % 10}%"


def total_text(entry):
    """``12 [8, 17]``: a total and its 95% interval."""
    return f"{entry['total']:,} {interval_text(entry['interval'])}"


def difference_text(entry):
    return f"{entry['value']:+,} {interval_text(entry['interval'])}"


def rank_interval_text(interval):
    low, high = interval
    return str(low) if low == high else f"{low}–{high}"


def share_of_episodes_text(entry):
    """``2 of 72 (2.8%) [0.3%, 9.7%]``: episodes with casualties, their share and its Clopper–Pearson interval."""
    share = percent(entry["count"] / entry["of"]) if entry["of"] else "-"
    return f"{entry['count']} of {entry['of']} ({share}) {share_interval_text(entry['interval'])}"


def p_value_text(p):
    return "1" if p == 1 else f"{p:.3g}"


def pair_sentence(pair, replicates):
    """Sentences a reader can act on: "planner is above greedy in 100% of 10,000 resamples; separated at 95% ..."."""
    above, below = pair["above"], pair["below"]
    order = pair["order"]
    head = f"{above} is above {below} in {percent(order['above'])} of {replicates:,} resamples"
    if order["equal"]:
        head += f" (level in {percent(order['equal'])})"
    if pair["separated"]:
        verdict = "separated at 95%, so a new group starts below it"
    else:
        verdict = "not separable at 95%, so they share a group"
    test = pair["sign_test"]
    evidence = (
        f"Episode by episode, {above} is better in {test['above_better']} and {below} in {test['below_better']} "
        f"(sign test p = {p_value_text(test['p_value'])})."
    )
    return f"{head}; {verdict}. {evidence}"


def disagreement_sentence(pair, episodes):
    """Why ``separated`` and the sign test can disagree on a pair, when they do (else None).

    They answer different questions (statistics.md §6): ``separated`` is about the campaign totals
    (C, S, P, X) over the resamples, the sign test about how many episodes each policy wins,
    whatever the margin.  They disagree when the pair is separated and p >= 0.05, or not
    separated and p < 0.05.
    """
    test = pair["sign_test"]
    above, below = pair["above"], pair["below"]
    m, n = test["above_better"], test["below_better"]
    wins = f"{m}:{n} episodes won, {episodes - m - n} level"
    if pair["separated"] and test["p_value"] >= 0.05:
        return (
            f"Why both hold: separated compares the campaign totals (casualties, then stranded, person-time to "
            f"safety, exposure), and {above}'s are smaller in at least 97.5% of resamples; the sign test counts only "
            f"who wins each episode ({wins}), not by how much, so a lead made of a few episodes or of large margins "
            "separates the totals without winning most episodes."
        )
    if not pair["separated"] and test["p_value"] < 0.05:
        winner = above if m > n else below
        return (
            f"Why both hold: the sign test counts only who wins each episode ({wins}) and {winner} wins clearly "
            f"more; separated compares the campaign totals, and in more than 2.5% of resamples {above}'s are not "
            f"smaller than {below}'s: the wins are by small margins, or a few large losses outweigh them."
        )
    return None


def few_seed_warnings(statistics):
    """Warning sentences for few-seed scenarios (statistics.md §7), the single-seed ones first and plainest."""
    single = [s["scenario_id"] for s in statistics["few_seed_scenarios"] if s["seeds"] == 1]
    few = [s for s in statistics["few_seed_scenarios"] if s["seeds"] > 1]
    lines = []
    if single:
        lines.append(
            f"{_count(len(single), 'scenario')} {'has' if len(single) == 1 else 'have'} a single seed "
            f"({', '.join(single)}): every resample draws that one episode, so the intervals leave out how much "
            "these scenarios vary from seed to seed. They are narrower than the truth; run more seeds to measure it."
        )
    if few:
        listed = ", ".join(f"{s['scenario_id']} ({s['seeds']})" for s in few)
        lines.append(
            f"{_count(len(few), 'scenario')} {'has' if len(few) == 1 else 'have'} fewer than {FEW_SEEDS} seeds "
            f"({listed}): the bootstrap understates their seed-to-seed variation (by about (n − 1)/n in variance)."
        )
    return lines


def _count(n, noun):
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def policy_rows(statistics, distance=None):
    from ..ranking import distance_cells

    return [
        [
            entry["rank"],
            rank_interval_text(entry["rank_interval"]),
            percent(entry["rank_share"]),
            entry["group"],
            entry["policy"],
            total_text(entry["casualties"]),
            total_text(entry["stranded"]),
            total_text(entry["evacuated"]),
            total_text(entry["person_time_to_safety_total"]),
            share_of_episodes_text(entry["episodes_with_casualties"]),
        ]
        + (distance_cells(distance[entry["policy"]]) if distance is not None else [])
        for entry in statistics["policies"]
    ]


def pair_rows(statistics):
    rows = []
    for pair in statistics["pairs"]:
        order = pair["order"]
        test = pair["sign_test"]
        rows.append(
            [
                pair["above"],
                pair["below"],
                " / ".join(percent(order[side]) for side in ("above", "equal", "below")),
                "yes" if pair["separated"] else "no",
                difference_text(pair["casualties_difference"]),
                difference_text(pair["stranded_difference"]),
                difference_text(pair["person_time_difference"]),
                f"{test['above_better']}:{test['below_better']}, p = {p_value_text(test['p_value'])}",
            ]
        )
    return rows


def format_statistics(statistics, fmt, distance=None):
    """A ``statistics.json`` dict as plain text (``"table"``) or Markdown (``"markdown"``).

    ``distance``: each policy's ``Distance`` (bounds.md §5) when the results have
    ``bounds.jsonl``: two more columns of the policy table.
    Needs the ``cli`` extra (tabulate); without it a ``MissingExtraError`` says so.
    """
    from ..ranking import DISTANCE_COLUMNS, distance_sentence, require_tabulate

    if fmt not in _TABLE_STYLES:
        raise ValueError(f"format must be one of {', '.join(STATISTICS_FORMATS)}, got {fmt!r}")
    tabulate = require_tabulate()
    style = _TABLE_STYLES[fmt]
    markdown = fmt == "markdown"

    def heading(text):
        return f"**{text}**" if markdown else text

    title = (
        f"Campaign {statistics['campaign']}: statistics {statistics['statistics_version']} over "
        f"{statistics['episodes']} episodes, {statistics['replicates']:,} resamples, seed {statistics['seed']} "
        f"(ranking {statistics['ranking_version']})"
    )
    lines = [heading(title), "", f"Method: {statistics['method']}. Brackets: 95% intervals.", ""]
    warnings = few_seed_warnings(statistics)
    for warning in warnings:
        lines += [f"Warning: {warning}", ""]
    if statistics["policies"]:
        headers = POLICY_COLUMNS + (DISTANCE_COLUMNS if distance is not None else ())
        lines += [
            tabulate(policy_rows(statistics, distance), headers=headers, tablefmt=style, disable_numparse=True),
            "",
        ]
        if distance is not None:
            lines += [distance_sentence(distance), ""]
    else:
        lines += ["No policy has an ok row for every episode: nothing is ranked.", ""]
    if statistics["pairs"]:
        lines += [heading("Adjacent pairs (below minus above; order: shares of resamples)"), ""]
        lines += [tabulate(pair_rows(statistics), headers=PAIR_COLUMNS, tablefmt=style, disable_numparse=True), ""]
        for pair in statistics["pairs"]:
            lines.append(("- " if markdown else "") + pair_sentence(pair, statistics["replicates"]))
            why = disagreement_sentence(pair, statistics["episodes"])
            if why is not None:
                lines.append(("  - " if markdown else "  ") + why)
        lines.append("")
    if statistics["unranked"]:
        lines += [f"Unranked (not comparable on this campaign): {', '.join(statistics['unranked'])}.", ""]
    return "\n".join(lines)
