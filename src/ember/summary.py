"""Human-readable views of the metrics dict (output.md): a short summary and tables.

Both read only ``EpisodeMetrics.to_dict()``; they format, never compute a
metric (the official numbers are the JSON ones).  Tables are drawn by
tabulate (the ``cli`` extra).
"""

from .errors import MissingExtraError

#: The metric families of output.md, in the order the tables are printed;
#: the per-person table comes last.
FAMILIES = ("safety", "time", "movement", "path_efficiency", "fire_exposure", "exits", "replanning")
PEOPLE = "people"
_MISSING = "-"


# --- the summary (demo, metrics --format summary) ----------------------------------------------------------


_LABEL = 21  # the width of the summary's labels


def _percent(rate):
    return _MISSING if rate is None else f"{rate:.1%}"


def format_summary(metrics):
    """The lines a person reads first about an episode (``ember demo``, ``ember metrics --format summary``).

    Who got out, who did not and why (the ranking's order: casualties, then stranded, then
    person-time to safety, then exposure, ranking.md), how fast, how close the fire came, how
    often moves were blocked and which exits were used.  The numbers are the JSON's; ``-`` where
    the JSON has null.
    """
    safety, time, movement, exits = (metrics[k] for k in ("safety", "time", "movement", "exits"))
    fire = metrics["fire_exposure"]
    population = safety["population"]
    width = len(str(population))
    causes = safety["casualties_by_cause"]
    lines = [
        f"Episode {metrics['scenario_id']}, seed {metrics['seed']}: "
        f"{time['episode_steps']:,} steps (horizon {time['max_steps']:,}).",
        f"  {'population':<{_LABEL}}{population}",
    ]
    for label, count, rate, note in (
        ("evacuated", safety["evacuated"], safety["evacuated_rate"], ""),
        (
            "casualties",
            safety["casualties"],
            safety["casualty_rate"],
            f"  (moved into the fire {causes['entered_fire']}, caught by its spread {causes['fire_spread']})",
        ),
        ("stranded", safety["stranded"], safety["stranded_rate"], "  (active at the end)"),
    ):
        lines.append(f"  {label:<{_LABEL}}{count:>{width}} of {population}  {_percent(rate):>6}{note}")
    lines.append(
        f"  time to safety       {time['person_time_to_safety_total']:,} person-steps, "
        f"mean {time['mean_person_time_to_safety']:.2f} steps"
        f" (non-evacuees count as the horizon, {time['max_steps']:,})"
    )
    if time["last_evacuation_step"] is not None:
        lines.append(
            f"  evacuations          steps {time['first_evacuation_step']:,} to {time['last_evacuation_step']:,}"
        )
    nearest = fire["min_fire_distance"]
    lines.append(
        f"  fire exposure        {fire['exposure_total']:.4g} (sum of 1/distance to the fire), "
        f"mean {fire['mean_exposure']:.4g} per person-step; "
        + (
            "no fire while anyone was inside"
            if nearest is None
            else f"nearest fire {nearest} cell{'' if nearest == 1 else 's'}"
        )
    )
    if movement["blocked_rate"] is None:
        lines.append("  blocked moves        none attempted")
    else:
        lines.append(
            f"  blocked moves        {_percent(movement['blocked_rate'])}"
            f" ({movement['blocked_moves']:,} of {movement['movement_attempts']:,} attempts)"
        )
    lines.append(f"  exit use             {_exit_use(exits)}")
    return "\n".join(lines)


def _exit_use(exits):
    shares = exits["exit_shares"]
    if shares is None:
        return "nobody evacuated"
    counts = exits["evacuations_per_exit"]
    return ", ".join(f"{exit_id} {counts[exit_id]} ({shares[exit_id]:.0%})" for exit_id in sorted(counts))


# --- metrics as tables -------------------------------------------------------------


def format_value(value):
    """A metric value as table text: floats to 4 decimals, null as '-', cells as 'row,col'."""
    if value is None:
        return _MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list):
        return ",".join(format_value(v) for v in value)
    return str(value)


def _is_number(text):
    return text == _MISSING or text.lstrip("-").replace(".", "", 1).replace(",", "").isdigit()


def tables_available():
    """tabulate's function, or a ``MissingExtraError`` naming the ``cli`` extra."""
    try:
        from tabulate import tabulate
    except ImportError:
        raise MissingExtraError(
            "--format table needs tabulate: pip install 'ember-eval[cli]' (or pip install tabulate)."
        ) from None
    return tabulate


def format_table(header, rows):
    """Plain-text table with aligned columns: numbers right-aligned, text left-aligned."""
    tabulate = tables_available()
    cells = [[format_value(v) for v in row] for row in rows]
    align = ["right" if cells and all(_is_number(row[i]) for row in cells) else "left" for i in range(len(header))]
    text = tabulate(cells, headers=list(header), tablefmt="simple", disable_numparse=True, colalign=align)
    return "\n".join(line.rstrip() for line in text.split("\n"))


def _flatten(family):
    """(name, value) rows of a family; nested objects become 'outer.inner' rows."""
    rows = []
    for key, value in family.items():
        if isinstance(value, dict):
            rows.extend((f"{key}.{inner}", v) for inner, v in value.items())
        else:
            rows.append((key, value))
    return rows


def format_metrics_tables(metrics):
    """Every metric family as a two-column table, then the per-person table."""
    title = (
        f"EMBER metrics {metrics['metrics_version']}: scenario {metrics['scenario_id']} "
        f"({metrics['scenario_hash']}), seed {metrics['seed']}"
    )
    blocks = [title]
    for family in FAMILIES:
        blocks.append(f"{family}\n{format_table(('metric', 'value'), _flatten(metrics[family]))}")
    people = list(metrics[PEOPLE].values())
    columns = list(people[0]) if people else ["person_id"]
    blocks.append(f"{PEOPLE}\n{format_table(columns, [[p[c] for c in columns] for p in people])}")
    return "\n\n".join(blocks) + "\n"
