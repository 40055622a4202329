"""What every endpoint shares, built once when the application is made: ``Service`` (``app.state.service``)."""

import concurrent.futures
import hashlib
import multiprocessing
import os
from multiprocessing import forkserver

from . import anchor, submissions
from .boards import board_json, boards_json, load_board
from .database import Database
from .errors import ServiceRefusal
from .registry import team_of_token
from .store import RecordStore
from .uploads.slots import Slots
from .uploads.verifier import Spare

#: What the verifiers' fork server imports before it forks: the verifier (the engine), and the record store,
#: whose ``RecordStore`` START's argument names: unpickled in each verifying process, it imported the store
#: and SQLAlchemy there, about 0.3 s of every upload.
VERIFIER_PRELOAD = ("ember.service.uploads.verifier", "ember.service.store")


class Service:
    """The configuration (read once, at start-up), the database, the record store, the verification pool."""

    def __init__(self, config):
        self.config = config
        self.db = Database(self.config.database)
        self.store = RecordStore(self.config.records)
        self.limits = self.config.limits
        self.key = anchor.load_key(self.config.data)
        self.public_key = anchor.public_key_text(self.key)
        self.slots = Slots(self.db, self.limits)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.limits.verifications(), "ember-verify")
        # Verifying processes are forked from a server of their own, started afresh with the engine
        # loaded: never a fork of this process, its threads and its database connections.
        self.verifiers = multiprocessing.get_context("forkserver")
        self.verifiers.set_forkserver_preload(list(VERIFIER_PRELOAD))
        forkserver.ensure_running()  # now, not on the first upload: its start-up is no upload's time
        self.spare = Spare(self.verifiers)  # started by the application's start-up (``app.lifespan``)
        self._etags = {}

    # -- lookups -----------------------------------------------------------------------

    def board(self, name):
        with self.db.transaction(read=True) as connection:
            board = load_board(connection, name)
        if board is None:
            raise ServiceRefusal(404, f"no board {name!r:.80}")
        return board

    def board_json(self, name):
        """``GET /api/boards/{board}``'s JSON; 404 for an unknown board."""
        with self.db.transaction(read=True) as connection:
            found = board_json(connection, name)
        if found is None:
            raise ServiceRefusal(404, f"no board {name!r:.80}")
        return found

    def boards_json(self):
        with self.db.transaction(read=True) as connection:
            return boards_json(connection)

    def team(self, request):
        """The team of the request's bearer token; 401 when it is missing or unknown."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise ServiceRefusal(401, "missing bearer token (Authorization: Bearer TOKEN)")
        with self.db.transaction(read=True) as connection:
            team = team_of_token(connection, token.strip())
        if team is None:
            raise ServiceRefusal(401, "unknown or revoked token")
        return team

    def accepted(self, submission_id, scenario_id, seed):
        with self.db.transaction(read=True) as connection:
            return submissions.accepted(connection, submission_id, scenario_id, seed)

    def optional_team(self, request):
        return self.team(request) if "authorization" in request.headers else None

    def submission(self, submission_id, team):
        with self.db.transaction(read=True) as connection:
            found = submissions.find(connection, submission_id, team)
            board = load_board(connection, found.board)
        return found, board

    def etag(self, path):
        info = os.stat(path)
        key = (path, info.st_mtime_ns, info.st_size)
        if key not in self._etags:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            self._etags[key] = f'"{digest.hexdigest()}"'
        return self._etags[key]
