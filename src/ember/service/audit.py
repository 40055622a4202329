"""Appending to a board's audit log (service.md §4), under the board's lock, in the caller's transaction.

The entry's bytes and hash are ``ember.results.log``'s (the checker of
``ember verify --log`` reads them with the same definition).  The board's
row is locked for the transaction (``SELECT ... FOR UPDATE`` on
PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already holds the one write
lock), so two processes never append the same ``seq``; ``boards.version``
is the last ``seq``.
"""

import datetime
import math

import sqlalchemy as sa

from ..results.log import GENESIS, entry_line
from . import tables


def now():
    """UTC now as the log writes it: ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def until_tomorrow():
    """``Retry-After`` for a daily limit: the whole seconds from now to the next UTC midnight (when it resets)."""
    moment = datetime.datetime.now(datetime.timezone.utc)
    midnight = (moment + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return {"Retry-After": str(max(1, math.ceil((midnight - moment).total_seconds())))}


def lock_board(connection, board_id):
    """The board's row, locked until the transaction ends."""
    query = sa.select(tables.boards).where(tables.boards.c.id == board_id).with_for_update()
    return connection.execute(query).one()


def append(connection, board_id, event, *, team=None, policy=None, row=None, row_sha256=None, data=None):
    """Append one entry to the board's chain; returns its ``seq``.  The caller's transaction commits it."""
    board = lock_board(connection, board_id)
    seq = board.version + 1
    prev = GENESIS
    if board.version:
        last = tables.log.c
        prev = connection.execute(
            sa.select(last.hash).where(last.board_id == board_id, last.seq == board.version)
        ).scalar_one()
    entry = {
        "seq": seq,
        "at": now(),
        "event": event,
        "board": board.name,
        "team": team,
        "policy": policy,
        "row": row,
        "row_sha256": row_sha256,
        "data": data,
        "prev": prev,
    }
    line, digest = entry_line(entry)
    connection.execute(sa.insert(tables.log).values(board_id=board_id, seq=seq, entry=line, hash=digest))
    connection.execute(sa.update(tables.boards).where(tables.boards.c.id == board_id).values(version=seq))
    return seq


def last(connection, board_id):
    """(``seq``, ``hash``) of the board's last entry (every board has its ``board`` entry)."""
    c = tables.log.c
    query = sa.select(c.seq, c.hash).where(c.board_id == board_id).order_by(c.seq.desc()).limit(1)
    return tuple(connection.execute(query).one())


def entries(connection, board_id, after=0, limit=None):
    """The board's log lines (bytes, with their hash) after ``after``, in order."""
    c = tables.log.c
    query = sa.select(c.entry).where(c.board_id == board_id, c.seq > after).order_by(c.seq)
    if limit is not None:
        query = query.limit(limit)
    return [bytes(line) for line in connection.execute(query).scalars()]
