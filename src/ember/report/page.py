"""The report's HTML: one page, its CSS and script inline, every value escaped."""

import html

from ..results.layout import CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, STATISTICS_FILE
from ..versions import RANKING_VERSION

_CSS = """
:root { --ink:#111827; --muted:#6b7280; --line:#e5e7eb; --head:#f3f4f6; --accent:#b91c1c; --good:#15803d;
        --bad:#b91c1c; --paper:#ffffff; --band:#f9fafb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--band); color:var(--ink);
       font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif; }
header { background:linear-gradient(120deg,#7f1d1d,#b91c1c 55%,#ea580c); color:#fff; padding:28px 40px 22px; }
header h1 { margin:0 0 4px; font-size:26px; letter-spacing:.2px; }
header .meta { margin:0; opacity:.9; font-size:13px; }
header .meta code { color:#fff; background:rgba(255,255,255,.15); }
main { max-width:1360px; margin:0 auto; padding:8px 40px 40px; }
section { background:var(--paper); border:1px solid var(--line); border-radius:10px; margin:22px 0;
          padding:18px 24px 22px; box-shadow:0 1px 2px rgba(0,0,0,.04); }
h2 { margin:0 0 10px; font-size:19px; }
h3 { margin:22px 0 8px; font-size:15px; }
p.note, figcaption { color:var(--muted); font-size:13px; margin:6px 0 12px; }
code { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12.5px; background:var(--head);
       padding:1px 5px; border-radius:4px; }
.formula { border-left:4px solid var(--accent); background:#fef2f2; padding:8px 12px; border-radius:4px;
           font-size:14px; margin:4px 0 14px; }
.table-wrap { overflow-x:auto; }
table { border-collapse:collapse; width:100%; font-size:13.5px; font-variant-numeric:tabular-nums; }
th, td { padding:6px 9px; border-bottom:1px solid var(--line); text-align:right; white-space:nowrap; }
th { white-space:normal; vertical-align:bottom; min-width:3.5em; }
th { background:var(--head); font-weight:600; font-size:11.5px; text-transform:uppercase; letter-spacing:.03em;
     color:#374151; position:sticky; top:0; }
th.text, td.text { text-align:left; }
tbody tr:hover { background:#fff7ed; }
table.sortable th { cursor:pointer; user-select:none; }
table.sortable th[aria-sort="ascending"]::after { content:" \\25B2"; font-size:10px; }
table.sortable th[aria-sort="descending"]::after { content:" \\25BC"; font-size:10px; }
td.rank { font-weight:700; font-size:16px; }
tr.first td.rank { color:var(--accent); }
.kind { display:inline-block; padding:0 7px; border-radius:9px; background:var(--head); color:#374151;
        font-size:11.5px; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:7px; vertical-align:0; }
.spread { color:var(--muted); font-size:12px; }
.bar { display:flex; height:12px; min-width:160px; border-radius:3px; overflow:hidden; background:var(--line); }
.bar span { display:block; height:100%; }
.bar .above { background:var(--good); } .bar .equal { background:#9ca3af; } .bar .below { background:var(--bad); }
figure { margin:18px 0 26px; }
figure svg { max-width:100%; height:auto; display:block; }
nav { font-size:13px; margin:14px 0 0; }
nav a { color:#fff; margin-right:14px; text-decoration:none; border-bottom:1px solid rgba(255,255,255,.5); }
footer { color:var(--muted); font-size:12.5px; text-align:center; padding:0 40px 30px; }
.empty { color:var(--muted); font-style:italic; }
.ci { color:var(--muted); font-size:12px; }
.ci-bar { display:block; position:relative; height:6px; margin:4px 0 1px auto; width:110px; background:var(--line);
          border-radius:3px; }
.ci-range { position:absolute; top:0; height:100%; min-width:3px; background:#f59e0b; border-radius:3px; }
.ci-point { position:absolute; top:-2px; width:2px; height:10px; margin-left:-1px; background:var(--ink); }
.group { display:inline-block; min-width:1.6em; padding:0 6px; border-radius:9px; background:#fef3c7; color:#92400e;
         font-weight:600; text-align:center; }
.warning { border-left:4px solid #d97706; background:#fffbeb; padding:8px 12px; border-radius:4px; margin:4px 0 14px;
           font-size:14px; }
.warning.single { border-left-color:var(--accent); background:#fef2f2; }
ul.sentences { margin:8px 0 4px 18px; padding:0; } ul.sentences li { margin:4px 0; }
"""

# Sortable tables: click a header to sort by it (numbers by data-sort), again to reverse.
_SCRIPT = """
(function () {
  "use strict";
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) { raw = cell.textContent.trim(); }
    var number = Number(raw);
    return raw !== "" && !isNaN(number) ? number : raw.toLowerCase();
  }
  function compare(a, b) {
    if (typeof a === typeof b) { return a < b ? -1 : a > b ? 1 : 0; }
    return typeof a === "number" ? -1 : 1;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (th, column) {
      th.setAttribute("title", "sort by " + th.textContent.trim());
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var order = compare(key(r.cells[column]), key(s.cells[column]));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
"""


def escape(value):
    return html.escape(str(value), quote=True)


def cell(value, sort=None, cls=None):
    attributes = ""
    if sort is not None:
        attributes += f' data-sort="{escape(sort)}"'
    if cls:
        attributes += f' class="{cls}"'
    return f"<td{attributes}>{value}</td>"


def table(headers, rows, sortable=False, text_columns=()):
    head = "".join(
        f'<th class="text">{escape(h)}</th>' if i in text_columns else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    cls = ' class="sortable"' if sortable else ""
    body = "\n".join(f"<tr{row_cls}>{''.join(cells)}</tr>" for row_cls, cells in rows)
    return f'<div class="table-wrap"><table{cls}><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>'


def percent_text(rate):
    return f"{rate:.1%}"


def policy_cell(name, colour):
    swatch = f'<span class="swatch" style="background:{colour}"></span>' if colour else ""
    return cell(f"{swatch}{escape(name)}", sort=name, cls="text")


def _interval_bar(interval, point, scale):
    """A bar of a 95% interval on a common 0..``scale`` axis, with a tick at the campaign's own value."""
    low, high = interval
    scale = max(scale, 1)
    left, width, tick = (100 * low / scale, 100 * (high - low) / scale, 100 * point / scale)
    return (
        f'<span class="ci-bar" title="95% interval {low:,} to {high:,}">'
        # A point interval is drawn 3 px wide; at the right end it must not stick out of the track.
        f'<span class="ci-range" style="left:min({left:.2f}%, calc(100% - 3px));width:{width:.2f}%"></span>'
        f'<span class="ci-point" style="left:{tick:.2f}%"></span></span>'
    )


def total_cell(part, scale):
    """A total with its 95% interval and interval bar (statistics.md §5)."""
    low, high = part["interval"]
    text = f'{part["total"]} <span class="ci">[{low}, {high}]</span>'
    return cell(text + _interval_bar(part["interval"], part["total"], scale), sort=part["total"])


def rank_interval_text(interval):
    low, high = interval
    return str(low) if low == high else f"{low}–{high}"


#: The distance to the possible (bounds.md §5): columns shown when the results have bounds.jsonl.
DISTANCE_HEADERS = ("avoidable casualties", "evacuated of possible")


def distance_cells(distance):
    """A ``Distance``'s two cells (bounds.md §5), sortable by their numbers."""
    share = distance.evacuated / distance.evacuated_max if distance.evacuated_max else -1.0
    avoidable = distance.avoidable_casualties if distance.counted else -1
    note = f' <span class="spread">{distance.no_bound} without a bound</span>' if distance.no_bound else ""
    return [
        cell(escape(distance.avoidable_text()), sort=avoidable),
        cell(escape(distance.evacuated_text()) + note, sort=repr(share)),
    ]


def _distance_note(distances):
    if distances is None:
        return ""
    text = (
        "Avoidable casualties: casualties minus the fewest any sequence of actions could have had on the same "
        "episodes; evacuated of possible: evacuated out of the most any sequence could have evacuated "
        "(bounds.md: exact optima in hindsight, computed by a maximum flow over time; no policy sees the seed, "
        "so a policy may fall short for want of foresight as well as of skill)."
    )
    if distances.no_bound:
        text += f" {distances.no_bound} rows have no bound (bounds.md §3's limit) and are left out of both."
    return f'<p class="note" id="distance-note">{escape(text)}</p>'


def _leaderboard(ranking, colour, statistics, distances=None):
    if statistics is not None and ranking["ranked"]:
        return _leaderboard_with_intervals(ranking, colour, statistics, distances)
    headers = (
        "rank",
        "policy",
        "kind",
        "casualties",
        "stranded",
        "evacuated",
        "person-time to safety",
        "mean time to safety",
        "exposure",
        "casualty rate",
        "failed before ok",
    ) + (DISTANCE_HEADERS if distances is not None else ())
    rows = []
    for entry in ranking["ranked"]:
        rows.append(
            (
                ' class="first"' if entry["rank"] == 1 else "",
                [
                    cell(entry["rank"], cls="rank"),
                    policy_cell(entry["policy"], colour.get(entry["policy"])),
                    cell(f'<span class="kind">{escape(entry["kind"])}</span>', sort=entry["kind"], cls="text"),
                    cell(entry["casualties"]),
                    cell(entry["stranded"]),
                    cell(
                        f'{entry["evacuated"]} <span class="spread">of {entry["population"]}</span>',
                        sort=entry["evacuated"],
                    ),
                    cell(entry["person_time_to_safety_total"]),
                    cell(f"{entry['mean_person_time_to_safety']:.2f}", sort=repr(entry["mean_person_time_to_safety"])),
                    cell(f"{entry['exposure']:.4f}", sort=repr(entry["exposure"])),
                    cell(percent_text(entry["casualty_rate"]), sort=repr(entry["casualty_rate"])),
                    cell(entry["failed_before_ok"]),
                    *(distance_cells(distances.policy[entry["policy"]]) if distances is not None else ()),
                ],
            )
        )
    if not rows:
        return '<p class="empty">No policy has an ok row for every episode of the campaign: nothing is ranked.</p>'
    return table(headers, rows, sortable=True, text_columns=(1, 2))


_INTERVAL_TOTALS = (
    ("casualties", "casualties"),
    ("stranded", "stranded"),
    ("evacuated", "evacuated"),
    ("person-time to safety", "person_time_to_safety_total"),
)


def _leaderboard_with_intervals(ranking, colour, statistics, distances=None):
    """The leaderboard with each rank's interval and group beside it and interval bars on the totals."""
    headers = (
        "rank",
        "rank 95%",
        "group",
        "policy",
        "kind",
        *(title for title, _ in _INTERVAL_TOTALS),
        "mean time to safety",
        "exposure",
        "casualty rate",
        "failed before ok",
    ) + (DISTANCE_HEADERS if distances is not None else ())
    by_name = {entry["policy"]: entry for entry in statistics["policies"]}
    scales = {
        field: max(max(e[field]["interval"][1], e[field]["total"]) for e in statistics["policies"])
        for _, field in _INTERVAL_TOTALS
    }
    rows = []
    for entry in ranking["ranked"]:
        stats = by_name[entry["policy"]]
        share = stats["rank_share"]
        rank_title = f"rank {entry['rank']} in {share:.1%} of the resamples"
        rate = stats["casualty_rate"]
        rows.append(
            (
                ' class="first"' if entry["rank"] == 1 else "",
                [
                    cell(entry["rank"], cls="rank"),
                    cell(
                        f'<span title="{escape(rank_title)}">{rank_interval_text(stats["rank_interval"])}</span>',
                        sort=stats["rank_interval"][0],
                    ),
                    cell(f'<span class="group">{stats["group"]}</span>', sort=stats["group"]),
                    policy_cell(entry["policy"], colour.get(entry["policy"])),
                    cell(f'<span class="kind">{escape(entry["kind"])}</span>', sort=entry["kind"], cls="text"),
                    *(total_cell(stats[field], scales[field]) for _, field in _INTERVAL_TOTALS),
                    cell(f"{entry['mean_person_time_to_safety']:.2f}", sort=repr(entry["mean_person_time_to_safety"])),
                    cell(f"{entry['exposure']:.4f}", sort=repr(entry["exposure"])),
                    cell(
                        f'{percent_text(rate["value"])} <span class="ci">[{percent_text(rate["interval"][0])}, '
                        f"{percent_text(rate['interval'][1])}]</span>",
                        sort=repr(entry["casualty_rate"]),
                    ),
                    cell(entry["failed_before_ok"]),
                    *(distance_cells(distances.policy[entry["policy"]]) if distances is not None else ()),
                ],
            )
        )
    return table(headers, rows, sortable=True, text_columns=(3, 4))


def _few_seed_warnings(statistics):
    """The few-seed warnings of statistics.md §7, visible above the leaderboard; a single seed the plainest."""
    from ..stats.text import few_seed_warnings

    if statistics is None:
        return ""
    parts = []
    for line in few_seed_warnings(statistics):
        single = "single seed" in line
        label = "One seed only" if single else "Few seeds"
        parts.append(
            f'<p class="warning{" single" if single else ""}" role="note"><strong>{label}:</strong> {escape(line)}</p>'
        )
    return "\n".join(parts)


_STATISTICS_NOTE = (
    '<p class="note">Resampling the campaign: each resample draws, within every scenario, as many episodes as it '
    "has seeds (with repetition), the same ones for every policy, and ranks the policies again. Brackets are 95% "
    "intervals over the resamples; a group holds the policies that are not separable at 95% from the one listed "
    "directly above (a statement about neighbours, not about every two policies of a group).</p>"
)
_EPISODES_NOTE = (
    '<p class="note">The share of episodes with a casualty (or with a loss: a casualty or a stranded person), with its '
    "exact Clopper–Pearson 95% interval. It is the figure that speaks when nothing went wrong: no casualty in 5 "
    "episodes still allows a true share of up to 52.2%.</p>"
)


def _order_bar(order):
    return (
        f'<div class="bar" title="above {order["above"]:.2%} / equal {order["equal"]:.2%} / '
        f'below {order["below"]:.2%}">'
        f'<span class="above" style="width:{100 * order["above"]:.2f}%"></span>'
        f'<span class="equal" style="width:{100 * order["equal"]:.2f}%"></span>'
        f'<span class="below" style="width:{100 * order["below"]:.2f}%"></span></div>'
    )


def _difference_cell(part):
    low, high = part["interval"]
    return cell(f'{part["value"]:+} <span class="ci">[{low:+}, {high:+}]</span>', sort=part["value"])


def first_of(items, limit, what, where):
    """(the first ``limit`` of ``items``, a note saying where the rest are, or "") -- ``limit`` None: all."""
    if limit is None or len(items) <= limit:
        return items, ""
    note = f'<p class="note more">The first {limit:,} of {len(items):,} {escape(what)}; {where} has them all.</p>'
    return items[:limit], note


def _statistics(statistics, limit=None):
    """How sure the order is (statistics.md): the pairs, one sentence each, and the episodes with casualties.

    ``limit``: at most that many pairs and policies (the first ones), with a note naming statistics.json."""
    from ..stats.text import disagreement_sentence, p_value_text, pair_sentence, percent, share_of_episodes_text

    if statistics is None:
        return '<p class="empty">Statistics are not computed.</p>'
    head = (
        f'<p class="note">Statistics {escape(statistics["statistics_version"])}: {escape(statistics["method"])}; '
        f"{statistics['replicates']:,} resamples, seed {statistics['seed']} "
        f"(<code>ember stats</code> recomputes <code>{STATISTICS_FILE}</code>).</p>"
    )
    if not statistics["policies"]:
        return head + '<p class="empty">Nothing is ranked, so there is nothing to resample.</p>'
    parts = [head, _STATISTICS_NOTE]
    where = f"<code>{STATISTICS_FILE}</code>"
    pairs, pairs_note = first_of(statistics["pairs"], limit, "adjacent pairs", where)
    if pairs:
        rows = []
        for pair in pairs:
            order = pair["order"]
            test = pair["sign_test"]
            shares = " / ".join(percent(order[k]) for k in ("above", "equal", "below"))
            rows.append(
                (
                    "",
                    [
                        cell(escape(pair["above"]), cls="text"),
                        cell(escape(pair["below"]), cls="text"),
                        cell(f'{_order_bar(order)}<span class="ci">{shares}</span>', cls="text"),
                        cell("yes" if pair["separated"] else "no"),
                        _difference_cell(pair["casualties_difference"]),
                        _difference_cell(pair["stranded_difference"]),
                        _difference_cell(pair["person_time_difference"]),
                        cell(f"{test['above_better']}:{test['below_better']}"),
                        cell(p_value_text(test["p_value"]), sort=repr(test["p_value"])),
                    ],
                )
            )
        headers = (
            "above",
            "below",
            "order in the resamples (above / equal / below)",
            "separated",
            "Δ casualties",
            "Δ stranded",
            "Δ person-time",
            "episodes better (above:below)",
            "sign test p",
        )
        parts.append('<h3>Adjacent pairs</h3><p class="note">Differences are the lower policy minus the upper one.</p>')
        parts.append(table(headers, rows, text_columns=(0, 1, 2)) + pairs_note)
        sentences = "".join(
            f"<li>{escape(pair_sentence(p, statistics['replicates']))}"
            + "".join(f" {escape(why)}" for why in [disagreement_sentence(p, statistics["episodes"])] if why)
            + "</li>"
            for p in pairs
        )
        parts.append(f'<ul class="sentences">{sentences}</ul>')
    policies, more = first_of(statistics["policies"], limit, "policies", where)
    rows = [
        (
            "",
            [
                cell(escape(entry["policy"]), cls="text"),
                cell(escape(share_of_episodes_text(entry["episodes_with_casualties"]))),
                cell(escape(share_of_episodes_text(entry["episodes_with_loss"]))),
            ],
        )
        for entry in policies
    ]
    parts.append("<h3>Episodes with casualties</h3>" + _EPISODES_NOTE)
    parts.append(table(("policy", "with casualties [95%]", "with a loss [95%]"), rows, text_columns=(0,)) + more)
    return "\n".join(parts)


_UNRANKED_NOTE = (
    '<p class="note">Unranked means "not comparable on this campaign", not "ranked below": ranked policies are '
    "compared on exactly the same episodes, and these lack an ok row for some of them "
    "(<code>ember evaluate --retry-failed</code> reruns failed episodes).</p>"
)
_PAIRS_NOTE = (
    '<p class="note">For each two policies next to each other in the leaderboard: the episodes where the upper '
    "one's (casualties, stranded, time to safety, exposure) is lexicographically smaller (green), equal (grey) "
    "or greater (red). Informative only: the order comes from the totals.</p>"
)


def _counts_row(first, second, counts, keys, last):
    """A row of the unranked and pairs tables: two cells, the ``counts`` at ``keys``, then a text cell."""
    return ("", [first, second, *(cell(counts[k]) for k in keys), cell(last, cls="text")])


def _unranked(ranking, limit=None, kind=None):
    if not ranking["unranked"]:
        return '<p class="note">Every policy has an ok row for every episode: none is unranked.</p>'
    rows = []
    unranked, more = first_of(ranking["unranked"], limit, "unranked policies", f"<code>{RANKING_FILE}</code>")
    for entry in unranked:
        parts = [f"{entry[k]} {k}" for k in ("ok", "failed", "missing") if entry[k]]
        why = f"not comparable on this campaign: {', '.join(parts)} of {ranking['episodes']} episodes"
        shown = cell(f'<span class="kind">{escape(kind or entry["kind"])}</span>', cls="text")
        rows.append(
            _counts_row(policy_cell(entry["policy"], None), shown, entry, ("ok", "failed", "missing"), escape(why))
        )
    headers = ("policy", "kind", "ok", "failed", "missing", "why")
    return _UNRANKED_NOTE + table(headers, rows, text_columns=(0, 1, 5)) + more


def _pairs(ranking, limit=None):
    if not ranking["pairs"]:
        return '<p class="empty">Fewer than two ranked policies: no pairs.</p>'
    rows = []
    pairs, more = first_of(ranking["pairs"], limit, "adjacent pairs", f"<code>{RANKING_FILE}</code>")
    for pair in pairs:
        total = pair["above_better"] + pair["below_better"] + pair["equal"]
        widths = [100 * pair[k] / total for k in ("above_better", "equal", "below_better")]
        bar = (
            f'<div class="bar" title="{pair["above_better"]} / {pair["equal"]} / {pair["below_better"]}">'
            f'<span class="above" style="width:{widths[0]:.2f}%"></span>'
            f'<span class="equal" style="width:{widths[1]:.2f}%"></span>'
            f'<span class="below" style="width:{widths[2]:.2f}%"></span></div>'
        )
        above, below = (cell(escape(pair[k]), cls="text") for k in ("above", "below"))
        rows.append(_counts_row(above, below, pair, ("above_better", "equal", "below_better"), bar))
    headers = ("above", "below", "above better", "equal", "below better", "")
    return _PAIRS_NOTE + table(headers, rows, text_columns=(0, 1, 5)) + more


def _spread(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return f"{ordered[0]:g} / {median:g} / {ordered[-1]:g}"


def _scenarios(campaign, ranking, views, colour, statistics=None, after_scenario=None, distances=None, limit=None):
    if not ranking["ranked"]:
        return '<p class="empty">Nothing is ranked, so there is nothing to compare per scenario.</p>'
    ranked, more = first_of(ranking["ranked"], limit, "ranked policies", f"<code>{RANKING_FILE}</code>")
    sources = {s.get("scenario_id"): s.get("source") for s in campaign["scenarios"] if isinstance(s, dict)}
    parts = []
    headers = (
        "rank",
        "policy",
        "episodes",
        "evacuated",
        "casualties",
        "stranded",
        "person-time to safety",
        "exposure",
        "casualties per seed (min / median / max)",
        "evacuated per seed (min / median / max)",
    )
    if statistics is not None:
        headers += ("casualties 95%",)
        by_name = {entry["policy"]: entry for entry in statistics["policies"]}
    if distances is not None:
        headers += DISTANCE_HEADERS
    for scenario_id, by_policy in views.items():
        rows = []
        for entry in ranked:
            name = entry["policy"]
            part = entry["by_scenario"][scenario_id]
            episodes = by_policy[name]
            rows.append(
                (
                    "",
                    [
                        cell(entry["rank"]),
                        policy_cell(name, colour.get(name)),
                        cell(part["episodes"]),
                        cell(
                            f'{part["evacuated"]} <span class="spread">of {part["population"]}</span>',
                            sort=part["evacuated"],
                        ),
                        cell(part["casualties"]),
                        cell(part["stranded"]),
                        cell(part["person_time_to_safety_total"]),
                        cell(f"{part['exposure']:.4f}", sort=repr(part["exposure"])),
                        cell(_spread([v.casualties for v in episodes])),
                        cell(_spread([v.evacuated for v in episodes])),
                    ],
                )
            )
            if statistics is not None:
                low, high = by_name[name]["by_scenario"][scenario_id]["casualties"]["interval"]
                rows[-1][1].append(cell(f"[{low}, {high}]", sort=low))
            if distances is not None:
                rows[-1][1].extend(distance_cells(distances.scenario[name, scenario_id]))
        source = sources.get(scenario_id)
        seeds = len(next(iter(by_policy.values())))
        caption = f"{seeds} seed{'s' if seeds != 1 else ''}" + (
            f", source <code>{escape(source)}</code>" if source else ""
        )
        parts.append(
            f'<h3>{escape(scenario_id)}</h3><p class="note">{caption}</p>'
            + table(headers, rows, sortable=True, text_columns=(1,))
            + more
            + (after_scenario(scenario_id) if after_scenario is not None else "")
        )
    return "\n".join(parts)


#: isolation.md §4, in service.md §5's words: the fire is a function of the seed, and these seeds were known.
PUBLIC_SEEDS = "public seeds: a policy could have learned its seed from the fire"


#: Why public seeds matter, after ``PUBLIC_SEEDS``.
PUBLIC_SEEDS_WHY = (
    f"The seeds are listed in {CAMPAIGN_FILE} and the fire is a pure function of the seed: a policy that watched "
    "the first ignitions could have found its own and foreseen the fire (isolation.md §4). Boards that must "
    "exclude this evaluate on secret seeds."
)


def _public_seeds(public_seeds):
    if not public_seeds:
        return ""
    return f'<p class="warning" id="public-seeds" role="note">{PUBLIC_SEEDS}. {escape(PUBLIC_SEEDS_WHY)}</p>'


def ranking_sections(
    campaign, ranking, views, statistics=None, anchor="", after_scenario=None, public_seeds=True, distances=None,
    limit=None, leaderboard=None, kind=None,
):  # fmt: skip
    """The sections of a ranking that every page shows: leaderboard, how sure, pairs, per scenario.

    (anchor, title, inner HTML) tuples; ``anchor`` prefixes the section ids (a page with two tracks);
    ``after_scenario(scenario_id)``, when given, is HTML shown under that scenario's table; ``public_seeds``:
    whether the policies could have known the seeds (said above the leaderboard); ``distances``: the
    ``ember.results.distance.Distances`` of the rows when their bounds are known (bounds.md §5).
    ``limit``: the pairs, unranked and per-scenario tables show at most that many lines (the first ones,
    with a note naming the file that has them all); ``leaderboard(ranking, colour, statistics, distances)``:
    the leaderboard's table, when not the report's; ``kind``: what the unranked table calls every policy's
    kind, when not the ranking's.
    """
    from .plots import colours

    colour = colours([entry["policy"] for entry in ranking["ranked"]])
    leaderboard = leaderboard or _leaderboard
    leaderboard = f"""<div class="formula"><strong>Ranking {escape(ranking["ranking_version"])}:</strong> \
{escape(ranking["formula"])}.
Safety first: fewer casualties always rank above more, whatever the times.</div>
{_public_seeds(public_seeds)}
{_few_seed_warnings(statistics)}
{leaderboard(ranking, colour, statistics, distances)}
{_distance_note(distances)}
<p class="note">Exposure is Σ count / d over each episode's fire-distance histogram (a proximity proxy, not a
physical dose). Click a column header to sort; the rank column restores the official order.</p>
<h3>Unranked</h3>
{_unranked(ranking, limit, kind)}"""
    return [
        (f"{anchor}leaderboard", "Leaderboard", leaderboard),
        (f"{anchor}statistics", "How sure is the order", _statistics(statistics, limit)),
        (f"{anchor}pairs", "Pairwise evidence", _pairs(ranking, limit)),
        (
            f"{anchor}scenarios",
            "Per scenario",
            _scenarios(campaign, ranking, views, colour, statistics, after_scenario, distances, limit),
        ),
    ]


def section(anchor, title, body, cls=None):
    return "".join(_section_parts(anchor, title, [body], cls))


def _section_parts(anchor, title, body, cls=None):
    """``section``'s text as pieces, ``body`` a list of pieces."""
    attribute = f' class="{escape(cls)}"' if cls else ""
    return [f'<section id="{escape(anchor)}"{attribute}>\n<h2>{escape(title)}</h2>\n', *body, "\n</section>"]


def document(title, header, main, footer, generator, script="", attributes=""):
    """A whole page in the report's look: its CSS, the sortable tables' script (then ``script``), and
    ``header``, ``main`` and ``footer`` as given (HTML).  ``attributes`` go on the ``html`` element."""
    return "".join(document_parts(title, header, [main], footer, generator, script, attributes))


def document_parts(title, header, main, footer, generator, script="", attributes=""):
    """``document``'s text as a list of pieces, ``main`` a list of pieces itself (joined as they are): a
    caller joins the page once, never copying its largest pieces (the plots' SVG) into each enclosing part."""
    head = f"""<!DOCTYPE html>
<html lang="en"{attributes}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{escape(generator)}">
<link rel="icon" href="data:,">
<title>{escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{escape(title)}</h1>
{header}
</header>
<main>
"""
    tail = f"""
</main>
<footer>{footer}</footer>
<script>{_SCRIPT}{script}</script>
</body>
</html>
"""
    return [head, *main, tail]


def render_page(campaign, ranking, views, figures, verifiable, statistics=None, public_seeds=True, distances=None):
    """The whole page as text. ``figures``: (anchor, title, svg text, caption) tuples.

    ``verifiable``: the line saying how many rows ``ember verify`` can check; ``statistics``: statistics.json's
    dict (or None); ``public_seeds``: whether the policies could have known the seeds (say so above the board);
    ``distances``: the rows' distance to the possible (bounds.md §5), or None without bounds.jsonl.
    """
    versions = campaign.get("versions") if isinstance(campaign.get("versions"), dict) else {}
    meta = " · ".join(
        [f"ranking {escape(ranking['ranking_version'])}", f"metrics {escape(ranking['metrics_version'])}"]
        + [f"{escape(k)} {escape(versions[k])}" for k in ("simulator", "observation", "package") if k in versions]
        + [f"{ranking['episodes']} episodes", f"{len(ranking['ranked']) + len(ranking['unranked'])} policies"]
    )
    source = ranking["source"]
    # The plots' SVG is most of a large campaign's page: its strings go into the page's one join as they
    # are, never copied into a figures part, a section and a document first.
    figure_parts = []
    for anchor, title, svg, caption in figures:
        if figure_parts:
            figure_parts.append("\n")
        figure_parts += [
            f'<figure id="plot-{anchor}"><h3>{escape(title)}</h3>',
            svg,
            f"<figcaption>{escape(caption)}</figcaption></figure>",
        ]
    if not figure_parts:
        figure_parts = ['<p class="empty">Nothing is ranked, so there is nothing to plot.</p>']
    header = f"""<p class="meta">{meta}</p>
<p class="meta">computed from <code>{escape(source["file"])}</code> sha256 <code>{escape(source["sha256"])}</code>
and <code>{CAMPAIGN_FILE}</code>; <code>ember rank</code> recomputes <code>{RANKING_FILE}</code> from them.</p>
<p class="meta" id="verifiable">{escape(verifiable)}.</p>
<nav><a href="#leaderboard">Leaderboard</a><a href="#statistics">How sure</a><a href="#pairs">Pairwise evidence</a>
<a href="#scenarios">Per scenario</a><a href="#plots">Plots</a></nav>"""
    plots = ['<p class="note">Every plot shows the spread over seeds, not only the mean.</p>\n', *figure_parts]
    parts = ranking_sections(campaign, ranking, views, statistics, public_seeds=public_seeds, distances=distances)
    main = [section(*part) + "\n" for part in parts]
    main += _section_parts("plots", "Plots", plots)
    footer = f"""Made by <code>ember report</code>. The numbers are the official per-episode metrics (metrics
{escape(ranking["metrics_version"])}) in <code>{EPISODES_FILE}</code>; this page only arranges them."""
    parts = document_parts(
        f"EMBER campaign {ranking['campaign']}", header, main, footer, f"ember report (ranking {RANKING_VERSION})"
    )
    del main, plots, figure_parts
    return "".join(parts)
