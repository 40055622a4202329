"""A board as the service reads it (service.md §2, §3): its scenarios, seeds, versions and public JSON."""

import json
import threading

import sqlalchemy as sa

from ..scenario import compile_scenario
from . import tables


class BoardScenario:
    def __init__(self, row):
        self.scenario_id = row.scenario_id
        self.scenario_hash = row.scenario_hash
        self.data = bytes(row.data)
        seeds = json.loads(bytes(row.seeds))
        # The hidden track: a count (a board made with 1.0's seed forms: all live) or {"live": L, "final": F}.
        self.seeds = tuple(seeds) if isinstance(seeds, list) else seeds
        if isinstance(seeds, dict):
            self.live, self.final = seeds["live"], seeds["final"]
        elif isinstance(seeds, int):
            self.live, self.final = seeds, 0


class Board:
    """One board's immutable part (scenarios, versions, hidden commitment) and its ``version`` when read;
    read-only (``load_board`` hands the same object to every request of that version)."""

    def __init__(self, row, scenario_rows):
        self.id = row.id
        self.name = row.name
        self.versions = json.loads(bytes(row.versions))
        self.hidden = None if row.hidden is None else json.loads(bytes(row.hidden))
        self.version = row.version
        self.open = [BoardScenario(s) for s in scenario_rows if s.track == "open"]
        self.hidden_scenarios = [BoardScenario(s) for s in scenario_rows if s.track == "hidden"]
        self.by_id = {s.scenario_id: s for s in self.open}
        # None, or "closed" from the start of the reveal: no bundle is taken while the final keys run.
        self.hidden_state = getattr(row, "hidden_state", None)
        # The phases (UTC times as phases.TIME_FORMAT, or None) and the operator's words about the board.
        self.opens = getattr(row, "opens", None)
        self.closes = getattr(row, "closes", None)
        self.reveal_at = getattr(row, "reveal_at", None)
        self.description = getattr(row, "description", None)

    @property
    def revealed(self):
        return self.hidden is not None and self.hidden.get("revealed") is not None

    @property
    def has_final(self):
        """True when some hidden scenario has final keys (service.md §9)."""
        return any(s.final for s in self.hidden_scenarios)

    @property
    def has_live(self):
        return any(s.live for s in self.hidden_scenarios)

    def hidden_track(self, track):
        """``live`` or ``final`` for a hidden track name (``hidden``: final when the board has final keys)."""
        if track == "hidden":
            return "final" if self.has_final else "live"
        return track

    def episode_keys(self):
        """The open track's episode keys (scenario_id, seed), in board order."""
        return [(s.scenario_id, seed) for s in self.open for seed in s.seeds]

    def public(self, counts=None):
        """``GET /api/boards/{board}``'s JSON; ``counts``: ``board_counts``'s (the two counts that change without
        a log entry are read with each answer, not kept with the board)."""
        hidden = None
        if self.hidden is not None:
            hidden = {**self.hidden, "revealed": self.hidden.get("revealed")}
        return {
            "name": self.name,
            "versions": self.versions,
            "scenarios": [
                {"scenario_id": s.scenario_id, "scenario_hash": s.scenario_hash, "seeds": list(s.seeds)}
                for s in self.open
            ],
            "hidden": hidden,
            "version": self.version,
            "opens": self.opens,
            "closes": self.closes,
            "reveal_at": self.reveal_at,
            "description": self.description,
            **(counts or {}),
        }

    def scenario_bytes(self, scenario_id):
        for s in (*self.open, *self.hidden_scenarios):
            if s.scenario_id == scenario_id:
                return s.data
        return None


#: The columns besides name, version, versions and hidden whose change makes a board parsed again.
_CHANGING = ("hidden_state", "opens", "closes", "reveal_at", "description")

#: Each board's parsed form, with the columns it was parsed from: a request reads the board's row, and
#: parses it and its scenarios again only when they changed (a new version, the hidden track's state).
_parsed = {}


def load_board(connection, name):
    """The board called ``name``, or None."""
    if not isinstance(name, str) or len(name) > 64:
        return None
    row = connection.execute(sa.select(tables.boards).where(tables.boards.c.name == name)).first()
    if row is None:
        return None
    key = (row.name, row.version, row.versions, row.hidden, *(getattr(row, column, None) for column in _CHANGING))
    place = (str(connection.engine.url), row.id)  # one process may read several databases (the tests do)
    found = _parsed.get(place)
    if found is not None and found[0] == key:
        return found[1]
    c = tables.scenarios.c
    scenario_rows = connection.execute(
        sa.select(tables.scenarios).where(c.board_id == row.id).order_by(c.track, c.position)
    ).all()
    board = Board(row, scenario_rows)
    _parsed[place] = (key, board)
    return board


def board_counts(connection, board):
    """``teams``: the teams with at least one submission on ``board`` (open, closed or withdrawn);
    ``submissions``: its closed submissions."""
    s = tables.submissions.c
    teams = connection.execute(sa.select(sa.func.count(sa.distinct(s.team_id))).where(s.board_id == board.id))
    teams = teams.scalar_one()
    closed = connection.execute(sa.select(sa.func.count()).where(s.board_id == board.id, s.state == "closed"))
    return {"teams": teams, "submissions": closed.scalar_one()}


def board_json(connection, name):
    """``GET /api/boards/{board}``'s JSON of board ``name``, or None."""
    board = load_board(connection, name)
    return None if board is None else board.public(board_counts(connection, board))


def boards_json(connection):
    """``GET /api/boards``: each board's JSON (as ``GET /api/boards/{board}``), by name."""
    return [board_json(connection, name) for name in board_names(connection)]


def board_names(connection):
    return list(connection.execute(sa.select(tables.boards.c.name).order_by(tables.boards.c.name)).scalars())


_compiled = {}
_compiled_lock = threading.Lock()


def compiled_scenario(scenario):
    """The compiled scenario of a ``BoardScenario``, compiled once per process."""
    with _compiled_lock:
        found = _compiled.get(scenario.scenario_hash)
        if found is None:
            found = _compiled[scenario.scenario_hash] = compile_scenario(json.loads(scenario.data))
        return found
