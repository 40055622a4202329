"""The board page, the front page and a team's pages (service.md §3, §5).

A board's page is built once per board version by the ``serve`` parent's
``Deriver``, right after that version's derived files, from them: the
open track's export (campaign.json, episodes.jsonl, and the ranking.json
and statistics.json Ranking and Statistics computed over it) and the
open submissions' progress at that version.  Report arranges them
(``ember.report.board``).  ``DATA/derived/<board>/page-<version>.html`` is
written once and then only served: a request reads a file, never starts
a ranking or a bootstrap.

A team's pages (``/submissions/{id}``, ``/jobs/{id}``) are one static text each, the same for every id:
their script asks for the token and the API (``ember.report.team``).
"""

import base64
import contextlib
import functools
import hashlib
import json
import os
import re
import sys

import sqlalchemy as sa

from ..errors import MissingExtraError, ResultsError
from ..files import replace_file
from ..report.board import (
    HIDDEN_LABEL,
    OPEN_LABEL,
    VERSION_HEADER,
    About,
    BoardSummary,
    Progress,
    Track,
    board_page,
    index_page,
    pending_page,
    track_figures,
    track_of_rows,
)
from ..report.team import team_page
from ..results.layout import BOUNDS_FILE, CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, RECORDS_DIR, STATISTICS_FILE
from . import submissions, tables
from .boards import board_names, load_board
from .bounds import HIDDEN_SETS, bounds_path, shown_sets
from .derived import board_folder, latest
from .errors import ServiceRefusal

PAGE_PREFIX = "page-"
PAGE_SUFFIX = ".html"
MARKER_PREFIX = "shown-bounds-"  # not "page-": only pages are named so
KEEP = 2  # pages kept: a page being sent while the next one is written stays readable


def page_path(config, name, version):
    return os.path.join(board_folder(config, name), f"{PAGE_PREFIX}{version}{PAGE_SUFFIX}")


def latest_page(config, name):
    """(version, path) of board ``name``'s newest page, or None before the first one."""
    try:
        entries = os.listdir(board_folder(config, name))
    except FileNotFoundError:
        return None
    found = []
    for entry in entries:
        stem = entry[len(PAGE_PREFIX) : -len(PAGE_SUFFIX)]
        if entry.startswith(PAGE_PREFIX) and entry.endswith(PAGE_SUFFIX) and stem.isdigit():
            found.append((int(stem), os.path.join(board_folder(config, name), entry)))
    return max(found) if found else None


def open_progress(connection, board, version):
    """The open submissions of ``board`` as ``Progress``, counting their rows up to log entry ``version``."""
    s, r, t = tables.submissions.c, tables.rows.c, tables.teams.c
    done = sa.func.count(r.id)
    query = (
        sa.select(t.name, s.policy, done)
        .select_from(
            tables.submissions.join(tables.teams, t.id == s.team_id).outerjoin(
                tables.rows, sa.and_(r.submission_id == s.id, r.seq <= version)
            )
        )
        .where(s.board_id == board.id, s.state == "open")
        .group_by(s.id, t.name, s.policy, s.created_at)
        .order_by(s.created_at, s.id)
    )
    total = len(board.episode_keys())
    return [Progress(team, policy, count, total) for team, policy, count in connection.execute(query)]


def _read(folder, name):
    with open(os.path.join(folder, name), "rb") as handle:
        return handle.read()


def record_url(sha256):
    return f"/api/{RECORDS_DIR}/{sha256}"


def _track(name, label, folder, links, public_seeds, bounds=None, checked=None):
    if folder is None:
        return Track(name, label, public_seeds=public_seeds)
    parts = (
        name,
        label,
        json.loads(_read(folder, CAMPAIGN_FILE)),
        _read(folder, EPISODES_FILE),
        json.loads(_read(folder, RANKING_FILE)),
        json.loads(_read(folder, STATISTICS_FILE)),
        links,
    )
    try:
        return track_of_rows(*parts, public_seeds=public_seeds, bounds=bounds, checked=checked)
    except ResultsError as exc:
        if bounds is None:
            raise
        # Bounds that are not this export's keys (a file changed by hand): the page without the distance.
        print(f"ember: board page, {name} track: {exc}", file=sys.stderr, flush=True)
        return track_of_rows(*parts, public_seeds=public_seeds)


def open_track(folder, bounds=None, checked=None):
    """The open track of a derived export ``folder`` (None: nothing ranked at that version); ``bounds``: the
    bytes of its keys' ``bounds.jsonl``, to show the distance to the possible; ``checked``: the deriver's
    ``CheckedLines`` of the board (its rows are not checked again).  Its seeds are public: it is plotted."""
    track = _track("open", OPEN_LABEL, folder, record_url, public_seeds=True, bounds=bounds, checked=checked)
    track.plots = True
    return track


BUNDLE_KIND = "bundle"
LIVE_LABEL = (
    "secret live seeds: the feedback before the reveal; a bundle may have encoded what it saw of them in its "
    "own numbers"
)
FINAL_LABEL = "secret final seeds: run only after the board stopped taking bundles; the official hidden ranking"


def hidden_track(board, folder, name="hidden", bounds=None):
    """A hidden key set's track of its derived export ``folder`` (None: nothing ranked yet).

    Before the reveal the track has no record links: a link names a record, and the per-seed tables under
    the scenarios name the seeds (service.md §6).  Its leaderboard, statistics and per-scenario totals name
    none.  ``name``: ``hidden`` on a board without final keys, else ``live`` or ``final``.
    """
    label = {"hidden": HIDDEN_LABEL, "live": LIVE_LABEL, "final": FINAL_LABEL}[name]
    bounds = bounds if board.revealed else None  # a set's bounds name its seeds' fires: never before the reveal
    track = _track(name, label, folder, record_url if board.revealed else None, public_seeds=False, bounds=bounds)
    # The hidden track's policies are bundles the service ran (their export names them as records).
    track.kind = BUNDLE_KIND
    # The plots show every seed's outcome (a dot per seed): only once the seeds are revealed.
    track.plots = board.revealed
    return track


def board_tracks(config, board, folder, bounds=(), checked=None):
    """The tracks the page shows: the open one (of ``folder``), then the hidden ones when the board has them
    (each its newest derived export): the live set's before the reveal, the final then the live one after it
    (service.md §9).  A board without final keys shows its one hidden track as under 1.0.  ``bounds``: the
    tracks (open, live, final) whose ``bounds.jsonl`` the page reads, to show their distance to the possible."""

    def read(track):
        return _read(board_folder(config, board.name, track), BOUNDS_FILE) if track in bounds else None

    tracks = [open_track(folder, read("open"), checked)]
    if board.hidden is None:
        return tracks
    if not board.has_final:
        found = latest(config, board.name, "live")
        return [*tracks, hidden_track(board, None if found is None else found[1], bounds=read("live"))]
    shown = ("final", "live") if board.revealed else ("live",)
    for chosen in shown:
        if chosen == "live" and not board.has_live:
            continue
        found = latest(config, board.name, chosen)
        tracks.append(hidden_track(board, None if found is None else found[1], chosen, read(chosen)))
    return tracks


def _bounds_marker(config, name, version):
    # Beside the page: the tracks whose bounds it shows, so that a page made before them is made again.
    return os.path.join(board_folder(config, name), f"{MARKER_PREFIX}{version}")


def _shown_bounds(config, name, version):
    try:
        with open(_bounds_marker(config, name, version), encoding="utf-8") as handle:
            return set(handle.read().split())
    except FileNotFoundError:
        return set()


def _present_bounds(config, name):
    """The tracks whose ``bounds.jsonl`` the ``Bounder`` has made (a hidden set's only after the reveal)."""
    return {track for track in ("open", *HIDDEN_SETS) if os.path.exists(bounds_path(config, name, track))}


def api_paths(board):
    base = f"/api/boards/{board.name}"
    return base, [
        (RANKING_FILE, f"{base}/{RANKING_FILE}"),
        (STATISTICS_FILE, f"{base}/{STATISTICS_FILE}"),
        (EPISODES_FILE, f"{base}/{EPISODES_FILE}"),
        ("log", f"{base}/log"),
    ]


#: The report's plots of a track, by what they are drawn from: a new board version with the same ranked rows
#: (most versions: an upload to an open submission) draws nothing again.
_figures = {}
_FIGURES_KEPT = 8


def _draw(board, track):
    """``track``'s figures, drawn once per (board, track, ranked rows, plotted policies, bounds)."""
    if not track.ranked or not track.plots:
        return
    key = (board, track.name, track.ranking["source"]["sha256"], tuple(track.plotted()), track.distances is not None)
    if key not in _figures:
        try:
            figures = track_figures(track)
        except MissingExtraError as exc:
            print(f"ember: board page {board}, {track.name} track, no plots: {exc}", file=sys.stderr, flush=True)
            figures = []
        if len(_figures) >= _FIGURES_KEPT:
            _figures.clear()
        _figures[key] = figures
    track.figures = _figures[key]


def open_about(db, board):
    """{TEAM.NAME: ``About``} of the board's closed submissions: each one's page, close time, description
    and link (the last two when the submission has them)."""
    return {
        f"{entry['team']}.{entry['policy']}": About(
            f"/submissions/{entry['id']}", entry.get("closed_at"), entry.get("description"), entry.get("link")
        )
        for entry in submissions.listing(db, board)
    }


#: The board JSON's keys a page shows when present (service.md's board JSON grows them with the board's phases).
FACT_KEYS = ("description", "opens", "closes", "reveal_at", "teams", "submissions")


def board_facts(connection, board):
    """The board's ``FACT_KEYS`` from its JSON, None where absent; ``teams`` (teams with a submission on the
    board) and ``submissions`` (closed ones) are counted here when the JSON has none."""
    public = board.public()
    facts = {key: public.get(key) for key in FACT_KEYS}
    if facts["teams"] is None or facts["submissions"] is None:
        s = tables.submissions.c
        teams, closed = connection.execute(
            sa.select(
                sa.func.count(sa.distinct(s.team_id)),
                sa.func.count(s.id).filter(s.state == "closed"),
            ).where(s.board_id == board.id)
        ).one()
        facts["teams"] = teams if facts["teams"] is None else facts["teams"]
        facts["submissions"] = closed if facts["submissions"] is None else facts["submissions"]
    return facts


def write_page(config, db, name, checked=None):
    """Board ``name``'s page at the version of its newest derived files (written once); returns that version.
    ``checked``: the deriver's ``CheckedLines`` of the board's open track."""
    found = latest(config, name)
    if found is None:
        return None
    version, folder = found
    path = page_path(config, name, version)
    # Bounds made after the page (bounds.md §5): the same version's page again, with their distance.
    present = _present_bounds(config, name)
    if os.path.exists(path) and present <= _shown_bounds(config, name, version):
        return version
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
        progress = open_progress(connection, board, version)
        facts = board_facts(connection, board)
    poll, files = api_paths(board)
    shown = [track for track in shown_sets(board) if track in present]
    tracks = board_tracks(config, board, folder, shown, checked)
    tracks[0].about = open_about(db, board)
    for track in tracks:
        _draw(board.name, track)
    page = board_page(board.name, board.versions, version, tracks, progress, poll, files if folder else (), facts)
    replace_file(path, page.encode("utf-8"), durable=True)
    replace_file(_bounds_marker(config, name, version), " ".join(shown).encode("utf-8"), durable=True)
    _prune(config, name)
    return version


def _prune(config, name):
    folder = board_folder(config, name)
    pages = []
    for entry in os.listdir(folder):
        stem = entry[len(PAGE_PREFIX) : -len(PAGE_SUFFIX)]
        if entry.startswith(PAGE_PREFIX) and entry.endswith(PAGE_SUFFIX) and stem.isdigit():
            pages.append((int(stem), entry))
    for version, entry in sorted(pages)[:-KEEP]:
        for old in (os.path.join(folder, entry), _bounds_marker(config, name, version)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(old)


def page_headers(version):
    # The page is a file that changes with the board: a browser asks again rather than use a kept copy.
    return {"Cache-Control": "no-cache", VERSION_HEADER: str(version)}


def newest_page(service, board):
    """(path, headers) of ``GET /boards/{board}``'s newest page as written, or None before the first one."""
    for _ in range(3):  # a page pruned between listing and hashing: the next listing has a newer one
        found = latest_page(service.config, board.name)
        if found is None:
            return None
        version, path = found
        try:
            return path, {**page_headers(version), "ETag": service.etag(path)}
        except FileNotFoundError:
            continue
    return None


def pending_html(board):
    """The page before the board's first one is derived: it reloads once that one is there."""
    return pending_page(board.name, api_paths(board)[0])


def _hidden_state(board):
    if board.hidden is None:
        return None
    if board.revealed:
        return "revealed"
    return "being revealed" if board.hidden_state is not None else "secret"


def index_html(db):
    """``GET /``: the boards (names, sizes, facts and counts from the database: no number of a ranking)."""
    summaries = []
    with db.transaction(read=True) as connection:
        for name in board_names(connection):
            b = load_board(connection, name)
            if b is not None:
                facts = board_facts(connection, b)
                url = f"/boards/{b.name}"
                summaries.append(BoardSummary(b.name, url, len(b.open), len(b.episode_keys()), _hidden_state(b), facts))
    return index_page(summaries)


#: A submission's or a job's id as the service makes them (UUID4, lowercase): another path is not a page.
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@functools.cache
def _team_page(kind):
    """(bytes, headers) of a team's ``kind`` page: the same for every id, made once per process.

    The page's one script is allowed by its hash, nothing else runs; it may ask only this service, and no
    other site may frame it or learn its address from a link (the id is in the path)."""
    text = team_page(kind)
    script = re.search(r"<script>(.*?)</script>", text, re.DOTALL).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    headers = {"Content-Security-Policy": policy, "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}
    return text.encode("utf-8"), headers


def team_page_answer(kind, identifier):
    """(bytes, headers) of ``GET /submissions/{id}`` or ``GET /jobs/{id}``; 404 for a path that is no id."""
    if not _ID.fullmatch(identifier):
        raise ServiceRefusal(404, f"no such {kind}")
    return _team_page(kind)
