"""Derived files (service.md §3): each board's export, ranking and statistics, computed once per ``version``
outside the request path and served from files.

``DATA/derived/<board>/<version>/`` is the open track's export at that
board version (``export.export_board``, records hard-linked from the
store); ``<version>.none`` marks a version with no ranked submission.
Only the ``serve`` parent process computes them (``Deriver``); every
server process serves the newest complete one, so a request never starts
a ranking or a bootstrap.
"""

import os
import shutil
import threading

from ..errors import EmberError
from ..results.layout import LOG_FILE
from .boards import board_names, load_board
from .export import NothingRanked, export_board
from .leases import BOARD

NONE_SUFFIX = ".none"
KEEP = 2  # versions kept: a file being streamed from the previous one stays readable


def board_folder(config, name, track="open"):
    # A hidden key set's versions sit in a folder of the open track's: ``latest`` skips its non-numeric name.
    folder = os.path.join(config.derived, name)
    return folder if track == "open" else os.path.join(folder, track)


def latest(config, name, track="open"):
    """(version, its export folder or None when nothing is ranked) of the newest derived version, or None."""
    folder = board_folder(config, name, track)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return None
    found = []
    for entry in names:
        stem = entry[: -len(NONE_SUFFIX)] if entry.endswith(NONE_SUFFIX) else entry
        if stem.isdigit():
            found.append((int(stem), None if entry.endswith(NONE_SUFFIX) else os.path.join(folder, entry)))
    return max(found) if found else None


def derive(config, db, name, replicates=None, track="open"):
    """Bring board ``name``'s derived files (of ``track``: open, live or final) up to its current version;
    returns that version.  The final set's are made from the reveal on, the live set's when it has keys."""
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
    if track != "open" and (board.hidden is None or not (board.revealed if track == "final" else board.has_live)):
        return board.version
    have = latest(config, name, track)
    if have is not None and have[0] >= board.version:
        return have[0]
    folder = board_folder(config, name, track)
    os.makedirs(folder, exist_ok=True)
    work = os.path.join(folder, f"tmp-{os.getpid()}-{board.version}")
    shutil.rmtree(work, ignore_errors=True)
    try:
        export_board(db, config, name, work, track=track, link=True, replicates=replicates)
    except NothingRanked:
        shutil.rmtree(work, ignore_errors=True)
        with open(os.path.join(folder, f"{board.version}{NONE_SUFFIX}"), "wb"):
            pass
    else:
        # The export read the board in one transaction: its log's last seq is the version it shows.
        with open(os.path.join(work, LOG_FILE), "rb") as handle:
            version = sum(1 for _ in handle)
        os.rename(work, os.path.join(folder, str(version)))
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
    """The ``serve`` parent's loop: every ``interval`` seconds, each board's derived files brought up to date,
    then each of ``also(config, db, name)`` (the board page, built from them).  With ``leases`` (several hosts
    on one database and shared store) only the boards whose lease this process holds."""

    def __init__(self, config, db, interval=1.0, also=(), leases=None):
        self.config = config
        self.db = db
        self.interval = interval
        self.also = tuple(also)
        self.leases = leases
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ember-deriver", daemon=True)

    def start(self):
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                with self.db.transaction(read=True) as connection:
                    names = board_names(connection)
                for name in names:
                    if self.leases is not None and not self.leases.hold(BOARD, name):
                        continue  # another host derives this board's files now
                    derive(self.config, self.db, name)
                    derive(self.config, self.db, name, track="live")
                    derive(self.config, self.db, name, track="final")
                    for step in self.also:
                        step(self.config, self.db, name)
            except (EmberError, OSError):
                pass  # the next round tries again (a database down, a full disk); requests answer for themselves
            self.stop.wait(self.interval)
