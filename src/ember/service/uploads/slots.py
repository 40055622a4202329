"""Limits counted in the database across server processes (service.md §3, §9): the ``in_flight`` slots."""

import contextlib
import os
import uuid

import sqlalchemy as sa

from ...errors import EmberError
from .. import audit, tables
from ..errors import RETRY_AFTER, ServiceRefusal
from ..leases import SERVER_VARIABLE, gone, live_servers

#: Bundle uploads in flight per team (service.md §9).
BUNDLES_PER_TEAM = 1
#: The row ``Slots`` locks (tables.locks).
SLOTS_LOCK = "slots"


class Slots:
    """Limits counted in the database across server processes (service.md §3, §9): per team, its uploads and
    its bundle uploads in flight, and its verifications; on the server, all verifications.

    Every count and the insert it allows are one transaction holding the ``slots`` lock row (``FOR UPDATE``
    on PostgreSQL; on SQLite the transaction's ``BEGIN IMMEDIATE``): two server processes never both count
    under a limit and both take the last slot.  A slot names its serve parent (``holder``); one that would
    refuse first frees the slots of serve parents whose lease ended (a host killed and not started again),
    then counts again.
    """

    def __init__(self, db, limits, holder=None):
        self.db = db
        self.limits = limits
        self.holder = holder if holder is not None else os.environ.get(SERVER_VARIABLE)

    def _refusal(self, connection, team, kind, taken):
        """The refusal of one more slot of ``kind`` for ``team`` (``taken``: those of this call), or None."""
        limits = self.limits
        c = tables.in_flight.c

        def count(where):
            found = connection.execute(sa.select(sa.func.count()).select_from(tables.in_flight).where(where))
            return found.scalar_one() + sum(1 for other in taken if other == kind)

        if kind == "upload" and count((c.kind == kind) & (c.team_id == team.id)) >= limits.uploads_per_team:
            return 429, f"team {team.name} has {limits.uploads_per_team} uploads in flight (the limit)"
        if kind == "bundle" and count((c.kind == kind) & (c.team_id == team.id)) >= BUNDLES_PER_TEAM:
            return 429, f"team {team.name} has a bundle upload in flight (the limit)"
        if kind == "verify":
            if count((c.kind == kind) & (c.team_id == team.id)) >= limits.verifications_per_team:
                return 429, f"team {team.name} has {limits.verifications_per_team} verifications running (the limit)"
            if count(c.kind == kind) >= limits.verifications():
                return 503, f"the server is verifying {limits.verifications()} records (the limit); try again shortly"
        return None

    def take(self, team, kinds):
        """One slot of each of ``kinds`` (``upload``, ``bundle``, ``verify``) for ``team``, all or none; 429 or
        503 when a limit is reached.  Give them back with ``give_back``."""
        taken, ids = [], []
        with self.db.transaction() as connection:
            lock = sa.select(tables.locks.c.name).where(tables.locks.c.name == SLOTS_LOCK).with_for_update()
            connection.execute(lock).one()
            swept = False
            for kind in kinds:
                refusal = self._refusal(connection, team, kind, taken)
                if refusal is not None and not swept:
                    swept = True
                    if _free_ended(connection):
                        refusal = self._refusal(connection, team, kind, taken)
                if refusal is not None:
                    raise ServiceRefusal(*refusal, headers=RETRY_AFTER)
                taken.append(kind)
            for kind in taken:
                ids.append(str(uuid.uuid4()))
                connection.execute(
                    sa.insert(tables.in_flight).values(
                        id=ids[-1], team_id=team.id, kind=kind, started_at=audit.now(), holder=self.holder
                    )
                )
        return ids

    def give_back(self, taken):
        with contextlib.suppress(EmberError), self.db.transaction() as connection:
            connection.execute(sa.delete(tables.in_flight).where(tables.in_flight.c.id.in_(taken)))


def _free_ended(connection):
    """Remove the slots of serve parents that ended: whose lease ended, or a process of this host that is gone (a
    slot without a holder is left alone); True when there were some."""
    c = tables.in_flight.c
    holders = set(connection.execute(sa.select(c.holder).where(c.holder.is_not(None)).distinct()).scalars())
    live = set(connection.execute(live_servers()).scalars())
    ended = sorted(holder for holder in holders if holder not in live or gone(holder))
    if ended:
        connection.execute(sa.delete(tables.in_flight).where(c.holder.in_(ended)))
    return bool(ended)


def clear_slots(db):
    """At start (the ``serve`` parent): no upload of a server that is gone is in flight.

    Alone on its database a parent frees every slot; beside other hosts it frees those without a holder and
    those of serve parents that ended (``_free_ended``: a killed server started again, a host gone), and
    keeps the others', whose uploads run on.
    """
    with db.transaction() as connection:
        connection.execute(sa.delete(tables.in_flight).where(tables.in_flight.c.holder.is_(None)))
        _free_ended(connection)
