"""A board's bounds (bounds.md §5, service.md §3): ``bounds.jsonl`` of its open keys, and of each hidden key
set after the reveal, computed by the ``serve`` parent off the request path and served from files.

``DATA/derived/<board>/bounds.jsonl`` holds the open track's keys (the
board's scenarios in order, seeds ascending: K's order of campaign.md §4);
``DATA/derived/<board>/<set>/bounds.jsonl`` a hidden set's (``live``,
``final``), written only once the board is revealed: the secret seeds'
bounds name the seeds, so before the reveal none is computed into DATA at
all.  ``Bounder`` is a thread of the ``serve`` parent that hands one board
at a time to a spawned child process (the flows hold the GIL for as long as
they run: the parent's threads keep answering); the file appears whole
(written to a temporary sibling, then renamed), mode 0600, so a server
killed mid-way leaves none and its next start computes it again.  Without
the ``bounds`` extra (OR-Tools) the parent says so once and no file is
made: the endpoints answer 404 and nothing else changes.
"""

import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import sys
import threading

from ..errors import EmberError
from ..results.layout import BOUNDS_FILE
from .boards import board_names, load_board
from .derived import board_folder

HIDDEN_SETS = ("live", "final")


def bounds_path(config, name, track="open"):
    """Where board ``name``'s ``bounds.jsonl`` of ``track`` (open, live or final) is kept."""
    return os.path.join(board_folder(config, name, track), BOUNDS_FILE)


def open_keys(board):
    """The open track's keys as (scenario bytes, seed), in ``bounds.jsonl``'s order."""
    return [(s.data, seed) for s in board.open for seed in sorted(s.seeds)]


def hidden_keys(connection, board, chosen):
    """A hidden set's keys (``live`` or ``final``) as (scenario bytes, seed), in ``bounds.jsonl``'s order:
    the hidden scenarios in order, each one's seeds of that set ascending.  The one place the service reads
    which keys a set has for its bounds."""
    from .hidden import keys_of, secret_keys

    seeds = {}
    for scenario_id, _, seed in keys_of(secret_keys(connection, board.id), chosen):
        seeds.setdefault(scenario_id, []).append(seed)
    return [(s.data, seed) for s in board.hidden_scenarios for seed in sorted(seeds.get(s.scenario_id, ()))]


def bounds_bytes(keys):
    """The ``bounds.jsonl`` bytes of ``keys`` ((scenario bytes, seed) pairs), by Bounds (the child's work)."""
    from ..bounds import bounds_line

    return b"".join(bounds_line(json.loads(data), seed) for data, seed in keys)


def write_private(path, data):
    """``data`` at ``path`` whole or not at all, mode 0600 (DATA is the operator's alone)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    work = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    fd = os.open(work, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(work, path)
    except BaseException:
        if os.path.lexists(work):
            os.unlink(work)
        raise


def remove_partial(config):
    """The temporary files of a ``Bounder`` killed mid-write (the start-up sweep)."""
    for folder, _, files in os.walk(config.derived):
        for entry in files:
            if entry.startswith(f"{BOUNDS_FILE}.tmp-"):
                os.unlink(os.path.join(folder, entry))


def has_extra():
    return importlib.util.find_spec("ortools") is not None and importlib.util.find_spec("numpy") is not None


def wanted(config, connection, name):
    """(path, keys) of each of board ``name``'s bounds files not made yet; hidden sets only after the reveal."""
    board = load_board(connection, name)
    if board is None:
        return []
    found = []
    if not os.path.exists(bounds_path(config, name)):
        found.append((bounds_path(config, name), open_keys(board)))
    if board.hidden is not None and board.revealed:
        for chosen in HIDDEN_SETS:
            path = bounds_path(config, name, chosen)
            if not os.path.exists(path):
                keys = hidden_keys(connection, board, chosen)
                if keys:
                    found.append((path, keys))
    return found


class Bounder:
    """The ``serve`` parent's bounds loop: every ``interval`` seconds, each board's missing bounds files made,
    one at a time, in a spawned child process."""

    def __init__(self, config, db, interval=1.0):
        self.config = config
        self.db = db
        self.interval = interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ember-bounds", daemon=True)
        self.pool = None

    def start(self):
        if not has_extra():
            print(
                "ember: the 'bounds' extra (OR-Tools) is not installed: no board's bounds are computed "
                "(pip install 'ember-eval[bounds]')",
                file=sys.stderr,
                flush=True,
            )
            return False
        spawn = multiprocessing.get_context("spawn")
        self.pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=spawn)
        self.thread.start()
        return True

    def close(self):
        self.stop.set()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def run(self):
        while not self.stop.is_set():
            try:
                with self.db.transaction(read=True) as connection:
                    names = board_names(connection)
                for name in names:
                    with self.db.transaction(read=True) as connection:
                        todo = wanted(self.config, connection, name)
                    for path, keys in todo:
                        if self.stop.is_set():
                            return
                        write_private(path, self.pool.submit(bounds_bytes, keys).result())
            except (EmberError, OSError, concurrent.futures.process.BrokenProcessPool):
                pass  # the next round tries again (a database down, a full disk, a child killed)
            except RuntimeError:
                return  # the pool shut down: serve is ending
            self.stop.wait(self.interval)
