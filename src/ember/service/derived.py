"""Derived files (service.md §3): each board's ranking, statistics and page data, computed once per ``version``
outside the request path and served from files.

``DATA/derived/<board>/<version>/`` is the open track at that board version
as a results directory ``ember rank`` and ``ember stats`` read (its
``campaign.json``, ``episodes.jsonl`` and ``scenarios/``, the export's very
bytes, ``export.campaign_of``), with the ``ranking.json`` and
``statistics.json`` computed from it; ``<version>.none`` marks a version with
no ranked submission.  A hidden key set's versions (``<board>/live/``,
``<board>/final/``) are the set's whole export (``export.export_board``,
records hard-linked from the store).  Every server process serves the
newest complete version, so a request never starts a ranking or a bootstrap.

Only the ``serve`` parent's ``Deriver`` computes them, one board at a time,
each at the board's newest version when its turn comes: versions that
arrived meanwhile are never computed, so a rush of uploads costs one
computation, not one per upload.  Per board it keeps what the next version
needs of this one (``OpenTrack``): the log's ranked submissions and the rows
read so far (each read once), the rows' checked lines, each ranked policy's
ranking totals and statistics values; so memory is bounded by the board,
never by its number of versions, and a computation parses no row twice and
redoes only the resampling.  A version whose ranked submissions are those of
the last computed one (an upload to an open submission) gets that one's
files again, hard-linked: only a close or a withdrawal computes.
"""

import json
import os
import shutil
import threading

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..errors import EmberError
from ..results import CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, STATISTICS_FILE, CheckedLines, OkRows
from ..results.log import WITHDRAWALS
from . import audit, tables
from .boards import board_names, load_board
from .export import NothingRanked, campaign_of, export_board, hidden_snapshot, write_new, write_scenarios
from .folders import NONE_SUFFIX, board_folder, latest
from .leases import BOARD
from .rounds import every_round

KEEP = 2  # versions kept: a file being streamed from the previous one stays readable
#: What a version of the open track holds (a results directory ``ember rank`` and ``ember stats`` read).
OPEN_FILES = (CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, STATISTICS_FILE)


class OpenTrack:
    """What the deriver keeps of one board's open track from version to version (bounded by the board).

    ``seq``: the last log entry read; ``ranked``: the (team, policy) the log ranks, in the order of their last
    ``close`` (``results.log.ranked_submissions``, kept up entry by entry); ``rows``: every submission's rows
    as (seq, stored bytes), read once each; ``computed``: the ranked submissions and folder of the last version
    whose numbers were computed here; then what the next computation reuses: the rows' checked lines, each
    ranked policy's ranking totals (``ranking_of(kept=...)``) and statistics values (``BoardStatistics``);
    the page of a version reads its rows through the same ``checked`` lines.
    """

    def __init__(self):
        from ..stats import BoardStatistics

        self.seq = 0
        self.ranked = {}
        self.rows = {}
        self.computed = None
        self.checked = CheckedLines()
        self.ranking_totals = {}
        self.statistics = BoardStatistics()

    def read(self, db, name):
        """Read the board's log entries and rows after ``seq`` (one read transaction); returns the board.

        The rows are those up to the last entry read, found after it: a row is committed with its entry, so
        every row of an entry seen is there, whatever the isolation level.
        """
        r, s, t = tables.rows.c, tables.submissions.c, tables.teams.c
        with db.transaction(read=True) as connection:
            board = load_board(connection, name)
            if board is None:
                raise NothingRanked(f"board {name!r}: no such board")
            lines = audit.entries(connection, board.id, after=self.seq)
            entries = [json.loads(line) for line in lines]
            rows = []
            if entries:
                rows = connection.execute(
                    sa.select(r.seq, r.row, t.name, s.policy)
                    .join(tables.submissions, s.id == r.submission_id)
                    .join(tables.teams, t.id == s.team_id)
                    .where(s.board_id == board.id, r.seq > self.seq, r.seq <= entries[-1]["seq"])
                    .order_by(r.seq)
                ).all()
        for entry in entries:
            submission = (entry["team"], entry["policy"])
            if entry["event"] == "close":
                self.ranked.pop(submission, None)
                self.ranked[submission] = None
            elif entry["event"] in WITHDRAWALS:
                self.ranked.pop(submission, None)
        for seq, row, team, policy in rows:
            self.rows.setdefault((team, policy), []).append((seq, bytes(row)))
        if entries:
            self.seq = entries[-1]["seq"]
        return board

    def numbers(self, campaign, episodes, replicates=None):
        """(ranking.json, statistics.json) bytes of the track's campaign dict and episodes bytes: what ``ember
        rank`` and ``ember stats`` (B = 10,000 or ``replicates``, seed 0) give on them, each row parsed and
        checked once in the track's life, each unchanged policy's totals and values kept."""
        from ..ranking import ranking_bytes, ranking_of
        from ..results import results_of_bytes
        from ..stats import DEFAULT_REPLICATES, DEFAULT_SEED, statistics_bytes

        ok_rows = OkRows()
        results = results_of_bytes(campaign, episodes, consumers=(ok_rows,), checked=self.checked)
        ranking = ranking_of(results, ok_rows, kept=self.ranking_totals)
        self.statistics.update(results, ok_rows, ranking)
        statistics = self.statistics.statistics(replicates or DEFAULT_REPLICATES, DEFAULT_SEED)
        return ranking_bytes(ranking), statistics_bytes(statistics)


def derive_open(config, db, name, state, replicates=None):
    """Bring board ``name``'s open-track files up to its newest version with ``state`` (an ``OpenTrack``);
    returns that version."""
    board = state.read(db, name)
    version = state.seq
    have = latest(config, name)
    if have is not None and have[0] >= version:
        return have[0]
    folder = board_folder(config, name)
    os.makedirs(folder, exist_ok=True)
    ranked = tuple(state.ranked)
    target = os.path.join(folder, str(version))
    if not ranked:
        with open(target + NONE_SUFFIX, "wb"):
            pass
        _prune(folder)
        return version
    work = os.path.join(folder, f"tmp-{os.getpid()}-{version}")
    shutil.rmtree(work, ignore_errors=True)
    try:
        previous = state.computed
        if previous is not None and previous[0] == ranked and os.path.isdir(previous[1]):
            # The same ranked rows: the same bytes (an upload to an open submission changes no number).
            shutil.copytree(previous[1], work, copy_function=os.link)
        else:
            scenarios = [(s, list(s.seeds)) for s in board.open]
            campaign = canonical_json_reference(campaign_of(board, scenarios, ranked)) + b"\n"
            rows = sorted(row for submission in ranked for row in state.rows.get(submission, ()))
            episodes = b"".join(line + b"\n" for _, line in rows)
            ranking, statistics = state.numbers(json.loads(campaign), episodes, replicates)
            os.makedirs(work)
            write_scenarios(work, scenarios)
            for file, data in zip(OPEN_FILES, (campaign, episodes, ranking, statistics)):
                write_new(os.path.join(work, file), data)
        os.rename(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    state.computed = (ranked, target)
    _prune(folder)
    return version


def derive_hidden(config, db, name, track, kept=None):
    """Bring board ``name``'s ``track`` (live or final) files up to the board's version: the set's export,
    made from the reveal on for the final set, when the board has keys of it for the live one.  ``kept``: a
    dict the caller keeps, so that a version whose set has the same ranked jobs and rows as the last one
    exported here gets its files again (hard-linked) instead of a new export.  Returns the board's version."""
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
    if board is None or board.hidden is None or not (board.revealed if track == "final" else board.has_live):
        return None if board is None else board.version
    have = latest(config, name, track)
    if have is not None and have[0] >= board.version:
        return have[0]
    folder = board_folder(config, name, track)
    os.makedirs(folder, exist_ok=True)
    try:
        _, policies, rows, lines, _ = hidden_snapshot(db, name, track)
    except NothingRanked:
        policies, rows, lines = [], [], []
    # The set's files are the same while its jobs and rows are (the log and its head aside, which name the
    # version they were read at: each new set of rows gets them anew).
    identity = (board.revealed, tuple(policies), len(rows))
    work = os.path.join(folder, f"tmp-{os.getpid()}-{board.version}")
    shutil.rmtree(work, ignore_errors=True)
    kept = {} if kept is None else kept
    previous = kept.get(track)
    version = json.loads(lines[-1])["seq"] if lines else board.version
    if previous is not None and previous[0] == identity and os.path.exists(previous[1]):
        target = os.path.join(folder, str(version))
        if previous[1].endswith(NONE_SUFFIX):
            with open(target + NONE_SUFFIX, "wb"):
                pass
            target += NONE_SUFFIX
        else:
            shutil.copytree(previous[1], work, copy_function=os.link)
            os.rename(work, target)
    else:
        try:
            export_board(db, config, name, work, track=track, link=True)
        except NothingRanked:
            shutil.rmtree(work, ignore_errors=True)
            target = os.path.join(folder, f"{board.version}{NONE_SUFFIX}")
            with open(target, "wb"):
                pass
        else:
            # The export read the board in one transaction: its log's last seq is the version it shows.
            with open(os.path.join(work, "log.jsonl"), "rb") as handle:
                version = sum(1 for _ in handle)
            target = os.path.join(folder, str(version))
            os.rename(work, target)
    kept[track] = (identity, target)
    _prune(folder)
    return board.version


def _prune(folder):
    entries = []
    for entry in os.listdir(folder):
        stem = entry[: -len(NONE_SUFFIX)] if entry.endswith(NONE_SUFFIX) else entry
        if stem.isdigit():
            entries.append((int(stem), entry))
    for _, entry in sorted(entries)[:-KEEP]:
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


class Deriver:
    """The ``serve`` parent's loop: every ``interval`` seconds, each board brought up to date in turn
    (``derive_board``): its derived files, then each of ``also(config, db, name, checked)`` (the board page,
    built from them; ``checked``: the open track's ``CheckedLines``).  With ``leases`` (several hosts on one
    database and shared store) only the boards whose lease this process holds."""

    def __init__(self, config, db, interval=1.0, also=(), leases=None):
        self.config = config
        self.db = db
        self.interval = interval
        self.also = tuple(also)
        self.leases = leases
        self.tracks = {}  # board name -> its OpenTrack
        self.hidden = {}  # board name -> {set: (identity, folder) of its last export}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ember-deriver", daemon=True)

    def start(self):
        self.thread.start()

    def derive_board(self, name):
        """Board ``name``'s derived files and pages at its newest version: the one step a lease may wrap.
        Returns the open track's version."""
        state = self.tracks.setdefault(name, OpenTrack())
        version = derive_open(self.config, self.db, name, state)
        kept = self.hidden.setdefault(name, {})
        derive_hidden(self.config, self.db, name, "live", kept)
        derive_hidden(self.config, self.db, name, "final", kept)
        for step in self.also:
            step(self.config, self.db, name, state.checked)
        return version

    def run(self):
        every_round(self.stop, self.interval, self.round, "the derived files' loop")

    def round(self):
        with self.db.transaction(read=True) as connection:
            names = board_names(connection)
        for name in names:
            if self.leases is not None and not self.leases.hold(BOARD, name):
                continue  # another host derives this board's files now
            try:
                self.derive_board(name)
            except (EmberError, OSError):
                continue  # the next round tries again (a full disk); the other boards go on meanwhile
