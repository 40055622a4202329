"""A board page of the EMBER service (service.md §5), in the look of ``ember report``.

The service hands over, per track, the campaign, its rows, and the
``ranking.json`` and ``statistics.json`` that Ranking and Statistics
computed from those rows; and the open submissions with their progress.
This module only arranges them, with the report's own sections
(``page.ranking_sections``): the page computes no number.  The page polls
the board's JSON for its ``version`` and reloads once a newer page is
served (its ``Ember-Board-Version`` header), so no page stays stale.
"""

import functools
import urllib.parse

from ..results import OkRows, StatisticsRules, results_of_bytes
from ..results.bounds_file import bounds_of_bytes
from ..results.distance import Distances
from ..results.layout import EPISODES_FILE
from ..versions import RANKING_VERSION
from .data import collect
from .page import (
    DISTANCE_HEADERS,
    PUBLIC_SEEDS,
    PUBLIC_SEEDS_WHY,
    cell,
    document,
    escape,
    percent_text,
    policy_cell,
    rank_interval_text,
    ranking_sections,
    section,
    table,
    total_cell,
)

OPEN_LABEL = PUBLIC_SEEDS
HIDDEN_LABEL = "secret seeds: drawn at board add and unknown to every policy until the reveal"
#: The page's header naming the board version it shows; the script compares it with the board's JSON.
VERSION_HEADER = "Ember-Board-Version"
#: How often an open page asks for the board's version: well inside service.md §5's 30 s.
POLL_MS = 5000
#: Leaderboard rows shown before "show all" (the rest are on the page, folded); pairs, unranked and
#: per-scenario lines shown at all (the rest are in ranking.json and statistics.json); policies whose
#: every record is linked per seed; policies plotted (one colour each, the report's palette).
PAGE_ROWS = 100
LIMIT = 50
RECORD_POLICIES = 20
PLOTTED = 10

_BOARD_CSS = """
.track-label { display:inline-block; margin:0 0 10px; padding:3px 10px; border-radius:9px; background:#fef3c7;
               color:#92400e; font-size:13px; font-weight:600; }
section.track { border-top:4px solid var(--accent); }
td a, main p a { color:#1d4ed8; }
header p a { color:#fff; }
.bar .done { background:var(--good); }
.facts { margin:6px 0 0; font-size:14px; }
.facts span + span::before { content:" · "; opacity:.7; }
.board-description { margin:8px 0 0; max-width:80ch; }
td.who { white-space:normal; text-align:left; min-width:14em; max-width:30em; overflow-wrap:anywhere; }
td.who .name { font-weight:600; }
td.who .about { display:block; color:var(--muted); font-size:12.5px; white-space:nowrap; overflow:hidden;
                text-overflow:ellipsis; max-width:30em; }
td.who .when { display:block; color:var(--muted); font-size:12px; }
td.more { white-space:normal; text-align:left; }
td.more summary { cursor:pointer; color:#1d4ed8; font-size:12.5px; }
td.more dl { display:grid; grid-template-columns:auto auto; gap:2px 10px; margin:6px 0 0; font-size:12.5px; }
td.more dt { color:var(--muted); } td.more dd { margin:0; text-align:right; }
table.folded tr.later { display:none; }
button.unfold { margin:8px 0 0; font:inherit; font-size:13px; padding:3px 12px; cursor:pointer; }
"""

# Ask the board's JSON for its version every POLL_MS; when it is newer than the page's, ask the page itself
# (HEAD) which version it would now show, and reload only when that is newer too: while a new version is
# being derived, the page is not reloaded again and again.  A failed request just waits for the next turn.
_POLL_SCRIPT = """
(function () {
  "use strict";
  var root = document.documentElement;
  var shown = Number(root.getAttribute("data-board-version"));
  var api = root.getAttribute("data-poll");
  var every = Number(root.getAttribute("data-poll-ms"));
  if (!api || !window.fetch) { return; }
  function later() { window.setTimeout(check, every); }
  function check() {
    fetch(api, {cache: "no-store"}).then(function (answer) {
      return answer.ok ? answer.json() : null;
    }).then(function (board) {
      if (!board || !(board.version > shown)) { return null; }
      return fetch(window.location.href, {method: "HEAD", cache: "no-store"}).then(function (page) {
        var served = Number(page.headers.get("VERSION_HEADER"));
        // Reload once this request has ended (text() of a HEAD answer: ""), so that nothing is cut off.
        return page.text().then(function () {
          if (served > shown) { window.location.reload(); return "reloading"; }
          return null;
        });
      });
    }).catch(function () { return null; }).then(function (state) {
      if (state !== "reloading") { later(); }
    });
  }
  later();
})();
""".replace("VERSION_HEADER", VERSION_HEADER)

# A long leaderboard shows its first rows and a button for the rest (all are in the page: without a script,
# all show); sorting by a column shows them all, since the first rows of another order are not the first.
_FOLD_SCRIPT = """
(function () {
  "use strict";
  document.querySelectorAll("table.paged").forEach(function (table) {
    var later = table.querySelectorAll("tr.later").length;
    if (!later) { return; }
    table.classList.add("folded");
    var button = document.createElement("button");
    button.className = "unfold";
    button.type = "button";
    button.textContent = "Show the other " + later + " policies";
    function unfold() { table.classList.remove("folded"); button.remove(); }
    button.addEventListener("click", unfold);
    table.querySelectorAll("thead th").forEach(function (th) { th.addEventListener("click", unfold); });
    table.parentNode.insertAdjacentElement("afterend", button);
  });
})();
"""


class About:
    """What the board says of one ranked policy besides its numbers: its page (``url``), when it was closed
    (``when``, an ISO 8601 UTC time), and the team's one-line ``description`` and ``link`` (None when absent)."""

    def __init__(self, url=None, when=None, description=None, link=None):
        self.url = url
        self.when = when
        self.description = description
        self.link = link


class Track:
    """One track of a board page: its name, label, and (when something is ranked) what the page shows of it.

    ``record_url(sha256)`` gives the link of a row's record; None: no record links (the hidden track
    before the reveal).  ``public_seeds``: the policies could have known the seeds (the open track; the
    leaderboard says so too).  ``distances``: the rows' distance to the possible (bounds.md §5), or None.
    ``about``: {policy: ``About``}; ``kind``: what the leaderboard calls every policy's kind when not the
    ranking's (a hidden track's policies ran as bundles, exported as records); ``plots``: whether the page
    draws the report's plots of the track; ``figures``: those plots when already drawn (``track_figures``).
    """

    def __init__(
        self, name, label, campaign=None, results=None, ranking=None, statistics=None, record_url=None,
        public_seeds=False, ok_rows=None, distances=None,
    ):  # fmt: skip
        self.ok_rows = ok_rows
        self.distances = distances
        self.name = name
        self.label = label
        self.campaign = campaign
        self.results = results
        self.ranking = ranking
        self.statistics = statistics
        self.record_url = record_url
        self.public_seeds = public_seeds
        self.about = {}
        self.kind = None
        self.plots = False
        self.figures = None
        self._views = None

    @property
    def ranked(self):
        return self.ranking is not None and bool(self.ranking["ranked"])

    def data(self):
        """The ranked policies' ``PlotData`` (read once)."""
        if self._views is None:
            self._views = collect(self.results, self.ok_rows, [e["policy"] for e in self.ranking["ranked"]])
        return self._views

    def plotted(self):
        """The policies the plots show: the first ``PLOTTED`` of the leaderboard."""
        return [entry["policy"] for entry in self.ranking["ranked"][:PLOTTED]] if self.plots and self.ranked else []


def track_of_rows(
    name, label, campaign, episodes, ranking, statistics, record_url=None, public_seeds=False, bounds=None,
    checked=None,
):  # fmt: skip
    """A ``Track`` of parsed ``campaign.json``, ``episodes.jsonl`` bytes, and parsed ``ranking.json`` and
    ``statistics.json`` computed from them (by Ranking and Statistics, never here); ``bounds``: the bytes of
    the campaign's ``bounds.jsonl`` (Bounds'), when the track shows the distance to the possible; ``checked``:
    a ``CheckedLines`` whose lines are not checked again.

    Bad input is a ``ResultsError``.
    """
    ok_rows = OkRows()
    results = results_of_bytes(campaign, episodes, rules=StatisticsRules(), consumers=(ok_rows,), checked=checked)
    distances = None if bounds is None else Distances(ok_rows, bounds_of_bytes(bounds, results.campaign))
    return Track(name, label, campaign, results, ranking, statistics, record_url, public_seeds, ok_rows, distances)


def track_figures(track):
    """The report's figures of ``track``'s first ``PLOTTED`` policies ([] when it draws none): (anchor, title,
    svg, caption) tuples.  Needs the report extra (matplotlib): a ``MissingExtraError`` without it."""
    from . import figures_of

    policies = track.plotted()
    if not policies:
        return []
    return figures_of(track.data(), policies, track.distances)


class Progress:
    """One open submission on the page: its team and policy, and the episode keys done of the total."""

    def __init__(self, team, policy, done, total):
        self.team = team
        self.policy = policy
        self.done = done
        self.total = total


def _records(track, scenario_id):
    """Under a scenario's table: the first ranked policies' episodes, one cell per seed linking to its record."""
    results = track.results
    scenario_hash, seeds = next(
        (h, seeds) for h, (sid, seeds) in results.campaign.scenarios.items() if sid == scenario_id
    )
    rows = []
    ranked = track.ranking["ranked"]
    for entry in ranked[:RECORD_POLICIES]:
        cells = [policy_cell(entry["policy"], None)]
        for seed in seeds:
            row = track.ok_rows[entry["policy"], (scenario_hash, seed)]  # a ranked policy is ok on every key
            casualties = row.episode.casualties
            if row.record_sha256 is None:
                cells.append(cell(escape(casualties), sort=casualties))
            else:
                link = escape(track.record_url(row.record_sha256))
                title = escape(f"record of seed {seed}, sha256 {row.record_sha256}")
                cells.append(cell(f'<a class="record" href="{link}" title="{title}">{casualties}</a>', sort=casualties))
        rows.append(("", cells))
    note = (
        '<p class="note">Casualties per seed; each links to the episode\'s record, which '
        "<code>ember verify</code> replays to re-derive the row.</p>"
    )
    more = ""
    if len(ranked) > RECORD_POLICIES:
        more = (
            f'<p class="note more">The first {RECORD_POLICIES} of {len(ranked):,} ranked policies; every row, with '
            f"its record's sha256 (<code>/api/records/SHA256</code>), is in <code>{EPISODES_FILE}</code>.</p>"
        )
    return note + table(("policy", *(f"seed {seed}" for seed in seeds)), rows, sortable=True, text_columns=(0,)) + more


def _http_link(value):
    """``value`` when it is an http or https URL with a host, else None: nothing else is ever a link."""
    if not isinstance(value, str):
        return None
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        return None
    return value if parts.scheme in ("http", "https") and parts.hostname else None


def when_html(value):
    """An ISO 8601 UTC time as ``<time>``: ``2026-12-03 07:35 UTC`` (any other text as it is, escaped)."""
    text = str(value)
    shown = f"{text[:10]} {text[11:16]} UTC" if len(text) >= 17 and text[10:11] == "T" and text[-1:] == "Z" else text
    return f'<time datetime="{escape(text)}">{escape(shown)}</time>'


def _who_cell(track, policy, colour):
    """The policy, linked to its page, with its description, link and date under it."""
    about = track.about.get(policy) or About()
    swatch = f'<span class="swatch" style="background:{colour}"></span>' if colour else ""
    name = f'<span class="name">{escape(policy)}</span>'
    if about.url:
        name = f'<a class="name" href="{escape(about.url)}">{escape(policy)}</a>'
    parts = [swatch + name]
    if about.description:
        text = escape(about.description)
        parts.append(f'<span class="about description" title="{text}">{text}</span>')
    link = _http_link(about.link)
    if link:
        parts.append(f'<a class="about link" href="{escape(link)}" rel="nofollow noopener">{escape(link)}</a>')
    if about.when:
        parts.append(f'<span class="when">closed {when_html(about.when)}</span>')
    return f'<td class="who" data-sort="{escape(policy)}">{"".join(parts)}</td>'


def _more_cell(entry, stats, distances):
    """The secondary columns of a leaderboard row, folded: a ``<details>`` of (name, value) pairs."""
    rate = stats["casualty_rate"]
    low, high = stats["person_time_to_safety_total"]["interval"]
    pairs = [
        ("person-time to safety", f"{stats['person_time_to_safety_total']['total']} [{low}, {high}]"),
        ("mean time to safety", f"{entry['mean_person_time_to_safety']:.2f}"),
        ("exposure", f"{entry['exposure']:.4f}"),
        (
            "casualty rate",
            f"{percent_text(rate['value'])} [{percent_text(rate['interval'][0])}, {percent_text(rate['interval'][1])}]",
        ),
        ("failed before ok", str(entry["failed_before_ok"])),
    ]
    if distances is not None:
        distance = distances.policy[entry["policy"]]
        evacuated = distance.evacuated_text() + (f" ({distance.no_bound} without a bound)" if distance.no_bound else "")
        pairs += [(DISTANCE_HEADERS[0], distance.avoidable_text()), (DISTANCE_HEADERS[1], evacuated)]
    shown = "".join(f"<dt>{escape(head)}</dt><dd>{escape(value)}</dd>" for head, value in pairs)
    return f'<td class="more"><details><summary>more</summary><dl>{shown}</dl></details></td>'


def _interval_text(part):
    low, high = part["interval"]
    return f'{part["total"]} <span class="ci">[{low}, {high}]</span>'


def _leaderboard(track):
    """The board's leaderboard table (``ranking_sections``' ``leaderboard``): rank, its interval and group, the
    policy with what its team says of it, kind, the three safety totals with their intervals; the rest folded
    per row.  Only the plotted policies get a colour; rows after ``PAGE_ROWS`` are folded until asked for."""
    plotted = set(track.plotted())

    def leaderboard(ranking, colour, statistics, distances):
        by_name = {entry["policy"]: entry for entry in statistics["policies"]}
        scale = max(max(e["casualties"]["interval"][1], e["casualties"]["total"]) for e in statistics["policies"])
        rows = []
        for number, entry in enumerate(ranking["ranked"]):
            stats = by_name[entry["policy"]]
            share = stats["rank_share"]
            rank_title = f"rank {entry['rank']} in {share:.1%} of the resamples"
            kind = track.kind or entry["kind"]
            classes = " ".join(
                c for c in ("first" if entry["rank"] == 1 else "", "later" if number >= PAGE_ROWS else "") if c
            )
            rows.append(
                (
                    f' class="{classes}"' if classes else "",
                    [
                        cell(entry["rank"], cls="rank"),
                        cell(
                            f'<span title="{escape(rank_title)}">{rank_interval_text(stats["rank_interval"])}</span>',
                            sort=stats["rank_interval"][0],
                        ),
                        cell(f'<span class="group">{stats["group"]}</span>', sort=stats["group"]),
                        _who_cell(
                            track, entry["policy"], colour.get(entry["policy"]) if entry["policy"] in plotted else None
                        ),
                        cell(f'<span class="kind">{escape(kind)}</span>', sort=kind, cls="text"),
                        total_cell(stats["casualties"], scale),
                        cell(_interval_text(stats["stranded"]), sort=stats["stranded"]["total"]),
                        cell(
                            _interval_text(stats["evacuated"])
                            + f' <span class="spread">of {entry["population"]}</span>',
                            sort=stats["evacuated"]["total"],
                        ),
                        _more_cell(entry, stats, distances),
                    ],
                )
            )
        headers = ("rank", "rank 95%", "group", "policy", "kind", "casualties", "stranded", "evacuated", "more")
        html = table(headers, rows, sortable=True, text_columns=(3, 4, 8))
        return html.replace('<table class="sortable">', '<table class="sortable paged">', 1)

    return leaderboard


def _plots(track, anchor):
    """The plots section's body: the report's figures of the first policies, or why there are none."""
    if not track.plots:
        return '<p class="note">This track is plotted once its seeds are revealed: the plots show every seed.</p>'
    figures = track.figures if track.figures is not None else track_figures(track)
    if not figures:
        return (
            "<p class=\"note\">The report's plots need matplotlib (<code>pip install 'ember-eval[report]'</code>).</p>"
        )
    ranked = len(track.ranking["ranked"])
    shown = min(ranked, PLOTTED)
    parts = [
        f'<p class="note">The first {shown} of the leaderboard\'s {ranked:,} policies, in its colours. Every plot '
        "shows the spread over seeds, not only the mean.</p>"
    ]
    for name, title, svg, caption in figures:
        parts += [f'<figure id="{escape(anchor)}plot-{escape(name)}"><h3>{escape(title)}</h3>', svg,
                  f"<figcaption>{escape(caption)}</figcaption></figure>"]  # fmt: skip
    return "\n".join(parts)


def _track_head(track):
    label = f'<p class="track-label" role="note">{escape(track.label)}</p>'
    if track.public_seeds:
        # Said once on the page, here: the leaderboard below does not repeat it.
        label += f'<p class="warning" id="{escape(track.name)}-public-seeds" role="note">{escape(PUBLIC_SEEDS_WHY)}</p>'
    return label


def track_sections(track):
    """A track's sections: its heading and label, then the report's leaderboard, statistics, pairs and
    per-scenario tables (with the record links when the track has them), and its plots."""
    anchor = f"{track.name}-"
    title = f"{track.name.capitalize()} track"
    heading = _track_head(track)
    if not track.ranked:
        body = heading + '<p class="empty">No submission is ranked on this track yet.</p>'
        return section(f"{anchor}track", title, body, "track")
    views = track.data().episodes
    if track.record_url is None:
        after = None
        note = '<p class="note">This track\'s records are not published yet.</p>'
    else:
        after = functools.partial(_records, track)
        note = (
            '<p class="note">Each ranked row links its record (per scenario, below): <code>ember verify</code> '
            "replays it and re-derives the row; <code>ember service export</code> gives the whole board.</p>"
        )
    head = section(f"{anchor}track", title, heading + note, "track")
    parts = ranking_sections(
        track.campaign,
        track.ranking,
        views,
        track.statistics,
        anchor,
        after,
        public_seeds=False,
        distances=track.distances,
        limit=LIMIT,
        leaderboard=_leaderboard(track) if track.statistics is not None else None,
        kind=track.kind,
    )
    parts.append((f"{anchor}plots", "Plots", _plots(track, anchor)))
    return "\n".join([head, *(section(a, f"{title}: {name}", b) for a, name, b in parts)])


def _progress(progress):
    if not progress:
        return '<p class="empty">No open submission.</p>'
    rows = []
    for p in progress:
        share = 100 * p.done / p.total if p.total else 0
        bar = (
            f'<div class="bar" title="{p.done} of {p.total}">'
            f'<span class="done" style="width:{share:.2f}%"></span></div>'
        )
        state = "complete, not closed yet" if p.done == p.total else "receiving"
        rows.append(
            (
                "",
                [
                    cell(escape(p.team), cls="text"),
                    cell(escape(p.policy), cls="text"),
                    cell(f"{p.done} / {p.total}", sort=p.done),
                    cell(bar, cls="text"),
                    cell(escape(state), cls="text"),
                ],
            )
        )
    note = (
        '<p class="note">Submissions still receiving episodes: keys with an accepted record of the board\'s '
        "total. A submission is ranked once it is closed.</p>"
    )
    return note + table(("team", "policy", "keys done", "progress", "state"), rows, text_columns=(0, 1, 3, 4))


#: The board's facts the page shows when the board has them (service.md's board JSON), in this order.
FACTS = (("opens", "opens"), ("closes", "closes"), ("reveal_at", "reveals"))


def _facts(facts):
    """The board's description, its dates and its counts (each shown only when present)."""
    facts = facts or {}
    shown = [f"<span>{label} {when_html(facts[key])}</span>" for key, label in FACTS if facts.get(key) is not None]
    for key, one, many in (("teams", "team", "teams"), ("submissions", "submission", "submissions")):
        count = facts.get(key)
        if isinstance(count, int):
            shown.append(f"<span>{count:,} {one if count == 1 else many}</span>")
    html = f'<p class="facts" id="facts">{"".join(shown)}</p>\n' if shown else ""
    if facts.get("description"):
        html += f'<p class="board-description" id="description">{escape(facts["description"])}</p>\n'
    return html


def board_page(board, versions, version, tracks, progress, poll_url, files=(), facts=None):
    """The board page (str).

    ``board``: its name; ``versions``: the versions fixed at ``board add``; ``version``: the board version
    the page shows; ``tracks``: ``Track`` s, the open one first; ``progress``: ``Progress`` of the open
    submissions; ``poll_url``: the board's JSON; ``files``: (title, url) links to the board's files;
    ``facts``: the board's JSON (its ``description``, ``opens``, ``closes``, ``reveal_at``, ``teams`` and
    ``submissions`` are shown when present).
    """
    meta = " · ".join(
        [f"{escape(k)} {escape(v)}" for k, v in versions.items() if isinstance(v, str)] + [f"board version {version}"]
    )
    links = " ".join(f'<a href="{escape(url)}"><code>{escape(title)}</code></a>' for title, url in files)
    nav = "".join(f'<a href="#{escape(t.name)}-track">{escape(t.name.capitalize())} track</a>' for t in tracks)
    header = (
        _facts(facts)
        + f'<p class="meta">{meta}</p>\n'
        + (f'<p class="meta">files: {links}; <code>ember rank</code> and <code>ember stats</code> on the '
           "export give these bytes.</p>\n" if links else "")
        + f'<p class="meta" id="live">This page shows board version {version} and checks for a newer one every '
        f"{POLL_MS // 1000} s.</p>\n"
        f'<nav><a href="/">All boards</a>{nav}<a href="#open-submissions">Open submissions</a></nav>'
    )  # fmt: skip
    main = "\n".join(
        [*(track_sections(t) for t in tracks), section("open-submissions", "Open submissions", _progress(progress))]
    )
    footer = (
        "Made by <code>ember service</code> with <code>ember report</code>'s pages. Every number is "
        "<code>ember rank</code>'s and <code>ember stats</code>' over the board's rows; this page only arranges them."
    )
    attributes = (
        f' data-board="{escape(board)}" data-board-version="{version}" data-poll="{escape(poll_url)}"'
        f' data-poll-ms="{POLL_MS}"'
    )
    page = document(
        f"EMBER board {board}",
        header,
        main,
        footer,
        f"ember service (ranking {RANKING_VERSION})",
        _POLL_SCRIPT + _FOLD_SCRIPT,
        attributes,
    )
    return page.replace("</style>", _BOARD_CSS + "</style>", 1)


def pending_page(board, poll_url):
    """The page of a board whose first page is not derived yet: it says so and reloads once it is."""
    main = section("pending", "Being prepared", '<p class="empty">The board\'s page is being computed.</p>')
    attributes = f' data-board="{escape(board)}" data-board-version="0" data-poll="{escape(poll_url)}"'
    attributes += f' data-poll-ms="{POLL_MS}"'
    return document(f"EMBER board {board}", "", main, "", f"ember service (ranking {RANKING_VERSION})",
                    _POLL_SCRIPT, attributes)  # fmt: skip


class BoardSummary:
    """One board of the front page: its name and page, its open track's size, its hidden track's state
    (None: no hidden track; else ``secret``, ``being revealed`` or ``revealed``) and its ``facts`` (the
    board JSON's ``description``, ``closes``, ``reveal_at``, ``teams`` and ``submissions``, when present)."""

    def __init__(self, name, url, scenarios, episodes, hidden, facts=None):
        self.name = name
        self.url = url
        self.scenarios = scenarios
        self.episodes = episodes
        self.hidden = hidden
        self.facts = facts or {}


def _reveal_cell(summary):
    if summary.hidden is None:
        return cell('<span class="spread">no hidden track</span>', sort="", cls="text")
    text = escape(summary.hidden)
    if summary.hidden == "secret" and summary.facts.get("reveal_at") is not None:
        text += f' <span class="spread">until {when_html(summary.facts["reveal_at"])}</span>'
    return cell(text, sort=summary.hidden, cls="text")


def _count_cell(value):
    return cell(f"{value:,}", sort=value) if isinstance(value, int) else cell('<span class="spread">—</span>', sort=-1)


def index_page(boards):
    """The service's front page: ``boards`` as ``BoardSummary`` s, one line each to choose from."""
    rows = []
    for b in boards:
        description = b.facts.get("description")
        closes = b.facts.get("closes")
        rows.append(
            (
                "",
                [
                    cell(f'<a href="{escape(b.url)}">{escape(b.name)}</a>', sort=b.name, cls="text"),
                    cell(escape(description) if description else "", cls="text description"),
                    cell(when_html(closes), sort=closes, cls="text")
                    if closes
                    else cell("open-ended", sort="", cls="text"),
                    _count_cell(b.facts.get("teams")),
                    _count_cell(b.facts.get("submissions")),
                    cell(f'{b.scenarios} <span class="spread">({b.episodes:,} episodes)</span>', sort=b.episodes),
                    _reveal_cell(b),
                ],
            )
        )
    headers = ("board", "description", "closes", "teams", "submissions", "open scenarios", "hidden track")
    body = (
        table(headers, rows, sortable=True, text_columns=(0, 1, 2, 6))
        if rows
        else '<p class="empty">No board yet (<code>ember service board add</code> makes one).</p>'
    )
    page = document("EMBER boards", "", section("boards", "Boards", body), "",
                    f"ember service (ranking {RANKING_VERSION})")  # fmt: skip
    return page.replace("</style>", _INDEX_CSS + "</style>", 1)


_INDEX_CSS = """
td.description { white-space:normal; min-width:16em; max-width:36em; overflow-wrap:anywhere; }
"""
