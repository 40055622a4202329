"""The report's figures, drawn with matplotlib (the ``report`` extra) as inline SVG text.

Every figure shows the spread over seeds, not only a mean: a band from the
lowest to the highest seed around the mean curve, or one dot per seed next
to the mean bar.  matplotlib is imported when a figure is drawn, never at
``import ember``; the Agg backend draws without a display.
"""

import io

from ..errors import MissingExtraError

#: One colour per policy, in leaderboard order (matplotlib's tab10, colour-blind aware enough
#: for ten policies; more cycle).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_PANEL_WIDTH, _PANEL_HEIGHT = 4.6, 3.2
_MAX_COLUMNS = 3
_STYLE = {
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e7eb",
    "grid.linewidth": 0.8,
    "axes.edgecolor": "#9ca3af",
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "font.family": "DejaVu Sans",
    "svg.fonttype": "none",  # text stays text: smaller, selectable, crisp
    "text.parse_math": False,  # text is text, never TeX
}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise MissingExtraError(
            "the report's plots need matplotlib: pip install 'ember-eval[report]' (or pip install matplotlib)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return matplotlib, plt


def require():
    """Raise ``MissingExtraError`` unless matplotlib can be imported."""
    _pyplot()


def colours(policies):
    return {policy: PALETTE[i % len(PALETTE)] for i, policy in enumerate(policies)}


def _svg(matplotlib, plt, fig, salt):
    """The figure as an ``<svg>`` element: no XML prolog, IDs unique to this figure, no date."""
    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt}):
        fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg") :]


def _panels(plt, count):
    columns = min(_MAX_COLUMNS, count)
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(_PANEL_WIDTH * columns, _PANEL_HEIGHT * rows + 0.5), squeeze=False)
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return fig, list(axes.flat[:count])


def _legend(fig, axes, policies, colour, extra=()):
    """The policies' colours above the panels; ``extra``: more (label, colour) entries after them."""
    from matplotlib.lines import Line2D

    handles = [Line2D([0], [0], color=colour[p], lw=2.5) for p in policies]
    handles += [Line2D([0], [0], color=c, lw=2.5) for _, c in extra]
    labels = list(policies) + [label for label, _ in extra]
    rows = -(-len(labels) // 6)
    top = 1 - 0.07 * rows * 3.7 / fig.get_figheight()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=min(len(labels), 6),
        bbox_to_anchor=(0.5, 1.0),
    )
    fig.tight_layout(rect=(0, 0, 1, top))


def _per_scenario(views, policies, salt, panel):
    """A figure of one panel per scenario of ``views`` ({scenario_id: {policy: ...}}), each drawn by
    ``panel(ax, scenario_id, by_policy, policies, colour)``."""
    matplotlib, plt = _pyplot()
    colour = colours(policies)
    with matplotlib.rc_context(_STYLE):
        fig, axes = _panels(plt, len(views))
        for ax, (scenario_id, by_policy) in zip(axes, views.items()):
            panel(ax, scenario_id, by_policy, policies, colour)
        _legend(fig, axes, policies, colour)
        return _svg(matplotlib, plt, fig, salt)


def evacuation_curves(data, policies):
    """Cumulative share evacuated against the step, per scenario: mean over seeds, band from min to max."""
    return _per_scenario(data.evacuation, policies, "evacuation", _evacuation_panel)


def _evacuation_panel(ax, scenario_id, by_policy, policies, colour):
    import numpy as np

    horizon = max(band.horizon for band in by_policy.values())
    steps = np.arange(horizon + 1)
    for policy in policies:
        low, mean, high = by_policy[policy].curves(horizon)
        c = colour[policy]
        ax.fill_between(steps, low, high, step="post", color=c, alpha=0.18, linewidth=0)
        ax.step(steps, mean, where="post", color=c, lw=1.8, label=policy)
    ax.set_title(scenario_id)
    ax.set_xlabel("step")
    ax.set_ylabel("share evacuated")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(0, max(horizon, 1))


def _dots(ax, x, values, colour, width):
    """One dot per seed, spread sideways deterministically so equal values stay visible."""
    count = len(values)
    offsets = [0.0] if count == 1 else [width * (i / (count - 1) - 0.5) for i in range(count)]
    ax.scatter([x + o for o in offsets], values, s=14, color=colour, edgecolor="white", linewidth=0.5, zorder=3)


def casualties(data, policies):
    """Casualties as a share of the people, per scenario and policy: mean bar, one dot per seed."""
    views = data.episodes
    matplotlib, plt = _pyplot()
    colour = colours(policies)
    scenarios = list(views)
    width = 0.8 / len(policies)
    with matplotlib.rc_context(_STYLE):
        wide = min(_PANEL_WIDTH * _MAX_COLUMNS, max(6.0, 1.5 + 1.2 * len(scenarios) * max(1.0, len(policies) / 3)))
        fig, ax = plt.subplots(figsize=(wide, 3.8))
        for j, policy in enumerate(policies):
            for i, scenario_id in enumerate(scenarios):
                shares = [v.casualties / v.population for v in views[scenario_id][policy]]
                x = i - 0.4 + width * (j + 0.5)
                ax.bar(
                    x,
                    sum(shares) / len(shares),
                    width=width * 0.9,
                    color=colour[policy],
                    alpha=0.35,
                    label=policy if i == 0 else None,
                )
                _dots(ax, x, shares, colour[policy], width * 0.6)
        ax.set_xticks(range(len(scenarios)))
        ax.set_xticklabels(
            scenarios, rotation=20 if len(scenarios) > 4 else 0, ha="right" if len(scenarios) > 4 else "center"
        )
        ax.set_ylabel("casualties / people (per seed; bar = mean)")
        ax.set_ylim(0, 1.05)
        _legend(fig, [ax], policies, colour)
        return _svg(matplotlib, plt, fig, "casualties")


def possible(scenarios, policies, distances):
    """Per scenario, each policy's evacuations (bar) against evacuated_max on the same episodes (black line)."""
    matplotlib, plt = _pyplot()
    colour = colours(policies)
    width = 0.8 / len(policies)
    with matplotlib.rc_context(_STYLE):
        wide = min(_PANEL_WIDTH * _MAX_COLUMNS, max(6.0, 1.5 + 1.2 * len(scenarios) * max(1.0, len(policies) / 3)))
        fig, ax = plt.subplots(figsize=(wide, 3.8))
        for i, scenario_id in enumerate(scenarios):
            for j, policy in enumerate(policies):
                distance = distances.scenario[policy, scenario_id]
                x = i - 0.4 + width * (j + 0.5)
                ax.bar(x, distance.evacuated, width=width * 0.9, color=colour[policy], alpha=0.6)
                ax.hlines(distance.evacuated_max, x - width * 0.45, x + width * 0.45, color="black", lw=1.6)
        ax.set_xticks(range(len(scenarios)))
        ax.set_xticklabels(
            scenarios, rotation=20 if len(scenarios) > 4 else 0, ha="right" if len(scenarios) > 4 else "center"
        )
        ax.set_ylabel("people evacuated (sum over seeds)")
        ax.set_ylim(bottom=0)
        _legend(fig, [ax], policies, colour, extra=[("possible (evacuated_max)", "black")])
        return _svg(matplotlib, plt, fig, "possible")


def exit_shares(data, policies):
    """Each exit's share of an episode's evacuations, per scenario and policy: mean bar, one dot per seed."""
    return _per_scenario(data.episodes, policies, "exits", _exits_panel)


def _exits_panel(ax, scenario_id, by_policy, policies, colour):
    width = 0.8 / len(policies)
    exits = sorted({e for episodes in by_policy.values() for v in episodes for e in v.exits})
    for j, policy in enumerate(policies):
        used = [v for v in by_policy[policy] if v.evacuated and sum(v.exits.values())]
        for i, exit_id in enumerate(exits):
            shares = [v.exits.get(exit_id, 0) / sum(v.exits.values()) for v in used]
            x = i - 0.4 + width * (j + 0.5)
            if shares:
                ax.bar(x, sum(shares) / len(shares), width=width * 0.9, color=colour[policy], alpha=0.35)
                _dots(ax, x, shares, colour[policy], width * 0.6)
    ax.set_xticks(range(len(exits)))
    ax.set_xticklabels(exits)
    ax.set_ylim(0, 1.05)
    ax.set_title(scenario_id)
    ax.set_ylabel("share of evacuations")
    if not exits:
        ax.text(0.5, 0.5, "no exit data", transform=ax.transAxes, ha="center", color="#6b7280")


def fire_distances(data, policies):
    """The fire-distance histogram: share of person-states at each distance d, pooled; band over seeds."""
    return _per_scenario(data.episodes, policies, "fire", _fire_panel)


def _fire_panel(ax, scenario_id, by_policy, policies, colour):
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    top = max((d for episodes in by_policy.values() for v in episodes for d in v.histogram), default=0)
    if not top:
        ax.text(0.5, 0.5, "no fire near anyone", transform=ax.transAxes, ha="center", color="#6b7280")
    distances = np.arange(1, top + 1)
    for policy in policies:
        per_seed = []
        pooled = np.zeros(top)
        for v in by_policy[policy]:
            counts = np.array([v.histogram.get(int(d), 0) for d in distances], dtype=float)
            pooled += counts
            if counts.sum():
                per_seed.append(counts / counts.sum())
        if not pooled.sum():
            continue
        per_seed = np.array(per_seed)
        c = colour[policy]
        ax.fill_between(distances, per_seed.min(axis=0), per_seed.max(axis=0), color=c, alpha=0.15, linewidth=0)
        ax.plot(distances, pooled / pooled.sum(), color=c, lw=1.6, marker="o", ms=2.5)
    ax.set_title(scenario_id)
    ax.set_xlabel("distance d (cells)")
    ax.set_ylabel("share of person-states")
    if top:
        ax.set_xlim(0.5, top + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
