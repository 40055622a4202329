"""A board's bounds (bounds.md §5, service.md §3): ``bounds.jsonl`` of its open keys, and of each hidden key
set after the reveal, computed by the ``serve`` parent off the request path and served from files.

``DATA/derived/<board>/bounds.jsonl`` holds the open track's keys (the
board's scenarios in order, seeds ascending: K's order of campaign.md §4);
``DATA/derived/<board>/<set>/bounds.jsonl`` a hidden set's (``live``,
``final``: its keys as ``hidden.set_scenarios`` arranges them, the very
episodes of that set's export), written only once the board is revealed:
the secret seeds' bounds name the seeds, so before the reveal none is
computed into DATA at all, and nothing serves one.  ``Bounder`` is a
thread of the ``serve`` parent that hands one board's file at a time to a
spawned child process (the flows hold the GIL for as long as they run: the
parent's threads keep answering); the child dies with the thread that
started it (``PR_SET_PDEATHSIG``), however ``serve`` ends.  The file
appears whole (written to a temporary sibling, then renamed), mode 0600, so
a server killed mid-way leaves none and its next start computes it again.
Without the ``bounds`` extra (OR-Tools) in the child, the parent says so in
one line and makes no file: the endpoints answer 404 and nothing else
changes.

An export (``ember service export``) holds the ``bounds.jsonl`` of its
keys: the served file when it is there and matches the export's
``campaign.json``, else computed by the export command itself
(``export_bounds``).
"""

import json
import multiprocessing
import os
import signal
import sys
import threading

from starlette.responses import FileResponse

from ..errors import MissingExtraError, ResultsError
from ..results.layout import BOUNDS_FILE
from .boards import board_names, load_board
from .derived import board_folder
from .errors import ServiceRefusal
from .export import TRACKS, export_board
from .leases import BOARD
from .responses import CORS, public
from .rounds import STOP, every_round

HIDDEN_SETS = ("live", "final")
_EXTRA = "the 'bounds' extra (OR-Tools): pip install 'ember-eval[bounds]'"


def bounds_path(config, name, track="open"):
    """Where board ``name``'s ``bounds.jsonl`` of ``track`` (open, live or final) is kept."""
    return os.path.join(board_folder(config, name, track), BOUNDS_FILE)


def open_scenarios(board):
    """The open track's campaign as (``BoardScenario``, seeds ascending), in board order."""
    return [(s, sorted(s.seeds)) for s in board.open]


def hidden_scenarios(connection, board, chosen):
    """A hidden set's campaign (``live`` or ``final``) as (``BoardScenario``, seeds ascending): its export's."""
    from .hidden.secrecy import keys_of, secret_keys, set_scenarios

    return set_scenarios(board, keys_of(secret_keys(connection, board.id), chosen))


def episode_keys(scenarios):
    """(scenario bytes, seed) of each episode of ``scenarios``, in ``bounds.jsonl``'s order."""
    return [(s.data, seed) for s, seeds in scenarios for seed in seeds]


def bounds_bytes(keys):
    """The ``bounds.jsonl`` bytes of ``keys`` ((scenario bytes, seed) pairs), by Bounds (the child's work)."""
    from ..bounds import bounds_line

    return b"".join(bounds_line(json.loads(data), seed) for data, seed in keys)


def missing_extra():
    """None when this process can compute bounds, else the one line saying what it lacks."""
    try:
        import numpy  # noqa: F401
        from ortools.graph.python import max_flow  # noqa: F401
    except ImportError as exc:
        return f"{_EXTRA} ({exc})"
    return None


def _child(connection, function, args):
    from ..campaign.processes import set_parent_death_signal

    # A serve parent killed mid-flow takes its child along: no orphan keeps computing a file nobody writes.
    set_parent_death_signal(signal.SIGKILL)
    try:
        answer = (True, function(*args))
    except Exception as exc:  # a defect of Bounds, said in the parent's one line
        answer = (False, f"{type(exc).__name__}: {exc}")
    connection.send(answer)
    connection.close()


class ChildFailed(Exception):
    """The child's work raised (its one line), or the child died before it answered."""


def write_private(path, data):
    """``data`` at ``path`` whole or not at all, mode 0600 (DATA is the operator's alone)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
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


def remove_partial(config, mine=None):
    """The temporary files of a ``Bounder`` killed mid-write (the start-up sweep); with ``mine`` (a board's
    name -> whether this host holds its lease) only those of the boards this host computes."""
    if not os.path.isdir(config.derived):
        return
    for board in os.listdir(config.derived):
        if mine is not None and not mine(board):
            continue  # another host computes this board's files: its temporary file may be in the making
        for folder, _, files in os.walk(os.path.join(config.derived, board)):
            for entry in files:
                if entry.startswith(f"{BOUNDS_FILE}.tmp-"):
                    os.unlink(os.path.join(folder, entry))


def shown_sets(board):
    """The tracks whose bounds may be computed, served and shown now: the open one, and after the reveal each
    hidden set the board has keys of."""
    found = ["open"]
    if board.hidden is not None and board.revealed:
        found += [chosen for chosen in HIDDEN_SETS if (board.has_live if chosen == "live" else board.has_final)]
    return found


def wanted(config, connection, name):
    """(path, keys) of each of board ``name``'s bounds files not made yet; hidden sets only after the reveal."""
    board = load_board(connection, name)
    if board is None:
        return []
    found = []
    for track in shown_sets(board):
        path = bounds_path(config, name, track)
        if not os.path.exists(path):
            scenarios = open_scenarios(board) if track == "open" else hidden_scenarios(connection, board, track)
            found.append((path, episode_keys(scenarios)))
    return found


class Bounder:
    """The ``serve`` parent's bounds loop: every ``interval`` seconds, each board's missing bounds files made,
    one at a time, each in a spawned child process of its own."""

    def __init__(self, config, db, interval=1.0, leases=None):
        self.config = config
        self.db = db
        self.interval = interval
        self.leases = leases  # several hosts: only the boards whose lease this process holds
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ember-bounds", daemon=True)
        self.child = None
        self.checked = False  # whether this process has what bounds need (asked of a child, once)
        self.failed = set()  # files whose computation raised: tried again at the next start, not every second

    def start(self):
        self.thread.start()

    def close(self):
        self.stop.set()
        child = self.child
        if child is not None and child.is_alive():
            child.terminate()  # serve is ending: a flow half done is worth nothing

    def in_child(self, function, *args):
        """``function(*args)`` in a spawned child process (the engine's flows hold its GIL, not ours)."""
        spawn = multiprocessing.get_context("spawn")
        receiver, sender = spawn.Pipe(duplex=False)
        child = spawn.Process(target=_child, args=(sender, function, args), name="ember-bounds", daemon=True)
        child.start()
        self.child = child
        sender.close()
        try:
            ok, value = receiver.recv()
        except EOFError:
            raise ChildFailed(f"the child process ended with {child.exitcode} before it answered") from None
        finally:
            receiver.close()
            child.join()
            self.child = None
        if not ok:
            raise ChildFailed(value)
        return value

    def _say(self, text):
        print(f"ember: {text}", file=sys.stderr, flush=True)

    def run(self):
        every_round(self.stop, self.interval, self.round, "the bounds loop")

    def round(self):
        if not self.checked:
            missing = self.in_child(missing_extra)
            if missing is not None:
                self._say(f"no board's bounds are computed: {missing}")
                return STOP
            self.checked = True
        with self.db.transaction(read=True) as connection:
            names = board_names(connection)
        for name in names:
            if self.leases is not None and not self.leases.hold(BOARD, name):
                continue  # another host computes this board's files now
            with self.db.transaction(read=True) as connection:
                todo = wanted(self.config, connection, name)
            for path, keys in todo:
                if self.stop.is_set() or path in self.failed:
                    continue
                try:
                    data = self.in_child(bounds_bytes, keys)
                except ChildFailed as exc:
                    if self.stop.is_set():
                        return
                    # A defect on one board, or a child killed (out of memory): said once, tried at the next start.
                    self.failed.add(path)
                    self._say(f"board {name}: {BOUNDS_FILE} not computed: {exc}")
                    continue
                write_private(path, data)


# -- export ------------------------------------------------------------------------------------------


def served_file(config, board, track):
    """The path of the served ``bounds.jsonl`` of ``track`` (open, live or final) when it exists and may be
    used now (a hidden set's after the reveal), else None."""
    if track != "open" and track not in shown_sets(board):
        return None
    path = bounds_path(config, board.name, track)
    return path if os.path.exists(path) else None


def export_with_bounds(db, config, name, out, track="open"):
    """``ember service export``: ``exporting.export_board`` and the ``bounds.jsonl`` of the export's keys;
    returns the number of rows.  An export whose bounds can be neither copied nor computed here is refused
    before anything is written (``MissingExtraError``)."""
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
    chosen = None if board is None or track not in TRACKS else "open" if track == "open" else board.hidden_track(track)
    if chosen is not None and served_file(config, board, chosen) is None:
        missing = missing_extra()
        if missing is not None:
            raise MissingExtraError(f"ember service export: {BOUNDS_FILE} of board {name}'s {chosen} keys is not "
                                    f"computed yet, and computing it needs {missing}")  # fmt: skip
    count = export_board(db, config, name, out, track)
    export_bounds(config, board, chosen, out)
    return count


def export_bounds(config, board, track, out):
    """Write ``out/bounds.jsonl`` for the export ``out`` of ``board``'s ``track`` (its ``campaign.json`` and
    ``scenarios/`` written): the served file when it matches the export's keys, else computed here by the
    function ``ember bounds RESULTS_DIR`` and ``ember verify`` use."""
    from ..campaign.bounds import bounds_file_bytes
    from ..results.bounds_file import bounds_of_bytes
    from ..results.reader import check_campaign, read_campaign_value

    campaign = check_campaign(read_campaign_value(out), out)
    data = None
    path = served_file(config, board, track)
    if path is not None:
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            bounds_of_bytes(data, campaign, out)
        except ResultsError:
            data = None  # not this export's keys: computed below
    if data is None:
        data = bounds_file_bytes(out, campaign)
    with open(os.path.join(out, BOUNDS_FILE), "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


# -- endpoints ---------------------------------------------------------------------------------------


def _bounds_response(path, what):
    if not os.path.exists(path):
        raise ServiceRefusal(404, f"{what} are not computed yet")
    return FileResponse(path, media_type="application/x-ndjson", headers=CORS)


@public
def board_bounds(request):
    """``GET /api/boards/{board}/bounds.jsonl``: the open track's bounds once computed (404 before)."""
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    return _bounds_response(bounds_path(service.config, board.name), f"board {board.name}'s bounds")


@public
def hidden_bounds(request):
    """``GET /api/boards/{board}/hidden/{set}/bounds.jsonl`` (``live``, ``final``): after the reveal only."""
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    chosen = request.path_params["set"]
    if board.hidden is None:
        raise ServiceRefusal(404, f"board {board.name} has no hidden track")
    if chosen not in HIDDEN_SETS:
        raise ServiceRefusal(404, "no such file of the hidden track")
    if not board.revealed:
        raise ServiceRefusal(404, f"the hidden track's {chosen} {BOUNDS_FILE} is served after the reveal")
    if chosen not in shown_sets(board):
        raise ServiceRefusal(404, f"board {board.name} has no {chosen} key")
    return _bounds_response(bounds_path(service.config, board.name, chosen), f"the {chosen} keys' bounds")
