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

from ..results import OkRows, StatisticsRules, results_of_bytes
from ..results.bounds_file import bounds_of_bytes
from ..results.distance import Distances
from ..versions import RANKING_VERSION
from .data import collect
from .page import PUBLIC_SEEDS, cell, document, escape, policy_cell, ranking_sections, section, table

OPEN_LABEL = PUBLIC_SEEDS
HIDDEN_LABEL = "secret seeds: drawn at board add and unknown to every policy until the reveal"
#: The page's header naming the board version it shows; the script compares it with the board's JSON.
VERSION_HEADER = "Ember-Board-Version"
#: How often an open page asks for the board's version: well inside service.md §5's 30 s.
POLL_MS = 5000

_BOARD_CSS = """
.track-label { display:inline-block; margin:0 0 10px; padding:3px 10px; border-radius:9px; background:#fef3c7;
               color:#92400e; font-size:13px; font-weight:600; }
section.track { border-top:4px solid var(--accent); }
td a, main p a { color:#1d4ed8; }
header p a { color:#fff; }
.bar .done { background:var(--good); }
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


class Track:
    """One track of a board page: its name, label, and (when something is ranked) what the page shows of it.

    ``record_url(sha256)`` gives the link of a row's record; None: no record links (the hidden track
    before the reveal).  ``public_seeds``: the policies could have known the seeds (the open track; the
    leaderboard says so too).  ``distances``: the rows' distance to the possible (bounds.md §5), or None.
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

    @property
    def ranked(self):
        return self.ranking is not None and bool(self.ranking["ranked"])


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


class Progress:
    """One open submission on the page: its team and policy, and the episode keys done of the total."""

    def __init__(self, team, policy, done, total):
        self.team = team
        self.policy = policy
        self.done = done
        self.total = total


def _records(track, scenario_id):
    """Under a scenario's table: each ranked policy's episodes, one cell per seed linking to its record."""
    results = track.results
    scenario_hash, seeds = next(
        (h, seeds) for h, (sid, seeds) in results.campaign.scenarios.items() if sid == scenario_id
    )
    rows = []
    for entry in track.ranking["ranked"]:
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
    return note + table(("policy", *(f"seed {seed}" for seed in seeds)), rows, sortable=True, text_columns=(0,))


def track_sections(track):
    """A track's sections: its heading and label, then the report's leaderboard, statistics, pairs and
    per-scenario tables (with the record links when the track has them)."""
    anchor = f"{track.name}-"
    heading = f'<p class="track-label" role="note">{escape(track.label)}</p>'
    if not track.ranked:
        body = heading + '<p class="empty">No submission is ranked on this track yet.</p>'
        return section(f"{anchor}track", f"{track.name.capitalize()} track", body, "track")
    views = collect(track.results, track.ok_rows, [e["policy"] for e in track.ranking["ranked"]]).episodes
    if track.record_url is None:
        after = None
        note = '<p class="note">This track\'s records are not published yet.</p>'
    else:
        after = functools.partial(_records, track)
        note = (
            '<p class="note">Each ranked row links its record (per scenario, below): <code>ember verify</code> '
            "replays it and re-derives the row; <code>ember service export</code> gives the whole board.</p>"
        )
    head = section(f"{anchor}track", f"{track.name.capitalize()} track", heading + note, "track")
    parts = ranking_sections(
        track.campaign,
        track.ranking,
        views,
        track.statistics,
        anchor,
        after,
        public_seeds=track.public_seeds,
        distances=track.distances,
    )
    return "\n".join([head, *(section(a, f"{track.name.capitalize()} track: {title}", b) for a, title, b in parts)])


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


def board_page(board, versions, version, tracks, progress, poll_url, files=()):
    """The board page (str).

    ``board``: its name; ``versions``: the versions fixed at ``board add``; ``version``: the board version
    the page shows; ``tracks``: ``Track`` s, the open one first; ``progress``: ``Progress`` of the open
    submissions; ``poll_url``: the board's JSON; ``files``: (title, url) links to the board's files.
    """
    meta = " · ".join(
        [f"{escape(k)} {escape(v)}" for k, v in versions.items() if isinstance(v, str)] + [f"board version {version}"]
    )
    links = " ".join(f'<a href="{escape(url)}"><code>{escape(title)}</code></a>' for title, url in files)
    nav = "".join(f'<a href="#{escape(t.name)}-track">{escape(t.name.capitalize())} track</a>' for t in tracks)
    header = (
        f'<p class="meta">{meta}</p>\n'
        + (f'<p class="meta">files: {links}; <code>ember rank</code> and <code>ember stats</code> on the '
           "export give these bytes.</p>\n" if links else "")
        + f'<p class="meta" id="live">This page shows board version {version} and checks for a newer one every '
        f"{POLL_MS // 1000} s.</p>\n"
        f'<nav>{nav}<a href="#open-submissions">Open submissions</a></nav>'
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
        _POLL_SCRIPT,
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


def index_page(boards):
    """The service's front page: ``boards`` as (name, url, open scenarios, open episodes, has a hidden track)."""
    rows = [
        (
            "",
            [
                cell(f'<a href="{escape(url)}">{escape(name)}</a>', sort=name, cls="text"),
                cell(scenarios),
                cell(episodes),
                cell("yes" if hidden else "no"),
            ],
        )
        for name, url, scenarios, episodes, hidden in boards
    ]
    body = (
        table(("board", "open scenarios", "open episodes", "hidden track"), rows, sortable=True, text_columns=(0,))
        if rows
        else '<p class="empty">No board yet (<code>ember service board add</code> makes one).</p>'
    )
    return document("EMBER boards", "", section("boards", "Boards", body), "",
                    f"ember service (ranking {RANKING_VERSION})")  # fmt: skip
