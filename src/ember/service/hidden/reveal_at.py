"""The reveal at a board's ``reveal_at`` (docs/service.md, "Phases"): the ``serve`` parent's own thread.

Every round (each second, and at once when ``serve`` starts, so a server
that was down at that moment reveals when it starts again) it looks for
boards whose ``reveal_at`` has come and whose hidden track is neither
revealed nor being revealed, and reveals each with ``secrecy.reveal``, the
code ``ember service board reveal`` runs: the same refusal while a job is
queued or running (tried again next round: from ``reveal_at`` on no
bundle is taken, so only the jobs already there are waited for), the
same final jobs, the same ``reveal`` log entry.
"""

import sys
import threading

import sqlalchemy as sa

from ...errors import EmberError
from .. import tables
from ..phases import moment_of, utc_now
from ..rounds import every_round
from .secrecy import reveal


def due(db, now=None):
    """The names of the boards whose ``reveal_at`` has come and whose reveal has not begun."""
    b = tables.boards.c
    with db.transaction(read=True) as connection:
        found = connection.execute(
            sa.select(b.name, b.reveal_at, b.hidden)
            .where(b.reveal_at.is_not(None), b.hidden.is_not(None), b.hidden_state.is_(None))
            .order_by(b.reveal_at, b.name)
        ).all()
    now = now or utc_now()
    # A board revealed by hand before its time has ``hidden_state`` set: it is not named again.
    return [row.name for row in found if moment_of(row.reveal_at) <= now]


class Revealer:
    """Reveals each board at its ``reveal_at``, until ``stop`` is set."""

    def __init__(self, db, poll_s=1.0, say=None):
        self.db = db
        self.poll_s = poll_s
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.stop = threading.Event()
        self.waiting = {}  # board: the last reason its reveal was refused (said once, not every round)
        self.thread = threading.Thread(target=self.run, name="ember-revealer", daemon=True)

    def start(self):
        self.thread.start()

    def run(self):
        every_round(self.stop, self.poll_s, self.round, "the reveal at reveal-at", self.say)

    def round(self):
        try:
            names = due(self.db)
        except EmberError:
            return  # the database is down: try again next round
        for name in names:
            try:
                state = reveal(self.db, name)
            except EmberError as exc:
                if self.waiting.get(name) != str(exc):
                    self.waiting[name] = str(exc)
                    self.say(f"ember: board {name}: the reveal at its reveal-at waits: {exc}")
                continue
            self.waiting.pop(name, None)
            if state.revealed:
                self.say(f"ember: board {name}: the hidden track is revealed at its reveal-at ({state.keys} keys).")
            else:
                self.say(
                    f"ember: board {name}: the reveal at its reveal-at has begun: {state.final_jobs} final jobs to run."
                )
