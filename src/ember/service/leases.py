"""Leases in the database: which of the processes sharing it does a piece of shared work now.

Several ``serve`` hosts (or one) share one database and one shared store;
work whose result is the same whoever does it, but which two must never do
at once (a board's derived files, its bounds), is done under a lease: a row
of ``tables.leases`` per (kind, name) naming its holder and when it
expires.  A lease is taken when it is free, expired, or held by a process
of this host that no longer runs; its holder renews it (``Leases``: every
third of the lease while the process lives), so another host takes over
only once a holder is gone (killed: at its expiry).  A hidden job's lease
is the same rule on its own row (``hidden.jobs.claim``).  Each ``serve``
parent also holds a lease of its own (kind ``server``, named after its
holder): the upload slots its servers take name it, and once it ends they
are freed (``uploads.slots``).  Holders are named ``HOST:PID:RANDOM``.
"""

import contextlib
import datetime
import os
import socket
import threading
import uuid

import sqlalchemy as sa

from ..errors import EmberError
from . import audit, tables

#: The kind of a board's lease: its derived files and bounds.
BOARD = "board"
#: The kind of a serve parent's own lease (its name: the holder): its servers' upload slots live while it does.
SERVER = "server"
#: The environment variable that tells a serve parent's server processes its holder name.
SERVER_VARIABLE = "EMBER_SERVER_HOLDER"


def holder_name():
    """This process's name in a lease: host, process id and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def gone(holder):
    """True when ``holder`` names a process of this host that no longer runs (its lease need not be waited out).

    A process of another host is never known gone: its lease is waited out.
    """
    host, _, rest = (holder or "").partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _zombie(int(pid))


def _zombie(pid):
    """True when process ``pid`` has ended but is not reaped yet (a killed server's child, orphaned to an init
    that reaps late): it answers signal 0 but runs no more."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"


def later(seconds):
    """The moment ``seconds`` from now, as the database holds times (``audit.now``'s form)."""
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def take(db, kind, name, holder, lease_s):
    """True when ``holder`` holds lease (``kind``, ``name``) for ``lease_s`` seconds from now: taken (free,
    expired, or its holder gone) or renewed (its own); False while another holder's lease runs."""
    c = tables.leases.c
    key = (c.kind == kind) & (c.name == name)
    try:
        with db.transaction() as connection:
            found = connection.execute(sa.select(c.holder, c.expires_at).where(key).with_for_update()).first()
            if found is None:
                connection.execute(
                    sa.insert(tables.leases).values(kind=kind, name=name, holder=holder, expires_at=later(lease_s))
                )
                return True
            if found.holder != holder and found.expires_at >= audit.now() and not gone(found.holder):
                return False
            done = connection.execute(
                sa.update(tables.leases)
                .where(key, c.holder == found.holder)
                .values(holder=holder, expires_at=later(lease_s))
            )
            return done.rowcount == 1
    except sa.exc.IntegrityError:
        return False  # another holder inserted it at the same moment: it is theirs


def renew(db, kind, name, holder, lease_s):
    """Extend ``holder``'s lease; False when it is no longer its own (another holder took it over)."""
    c = tables.leases.c
    with db.transaction() as connection:
        done = connection.execute(
            sa.update(tables.leases)
            .where(c.kind == kind, c.name == name, c.holder == holder)
            .values(expires_at=later(lease_s))
        )
        return done.rowcount == 1


def release(db, kind, name, holder):
    """Give the lease back (if it is still ``holder``'s): another host may take it at once."""
    c = tables.leases.c
    with db.transaction() as connection:
        connection.execute(sa.delete(tables.leases).where(c.kind == kind, c.name == name, c.holder == holder))


def live_servers():
    """A select of the holder names of the serve parents whose lease runs now."""
    c = tables.leases.c
    return sa.select(c.name).where(c.kind == SERVER, c.expires_at >= audit.now())


def holder_of(db, kind, name):
    """(holder, expires_at) of a lease, or None when nobody holds it."""
    c = tables.leases.c
    with db.transaction(read=True) as connection:
        found = connection.execute(sa.select(c.holder, c.expires_at).where(c.kind == kind, c.name == name)).first()
    return None if found is None else (found.holder, found.expires_at)


class Leases:
    """One process's leases: ``hold(kind, name)`` takes (or keeps) one; a thread renews every lease held every
    third of ``lease_s`` until ``close``, which gives them back.

    A lease whose renewal finds it taken over is dropped (``hold`` says False until it is free again); while
    the database is down the leases run on until it answers or they expire.
    """

    def __init__(self, db, lease_s, holder=None):
        self.db = db
        self.lease_s = lease_s
        self.holder = holder or holder_name()
        self.held = set()
        self.guard = threading.Lock()
        # One take at a time: two threads of this process taking the same free lease at once would race
        # each other's insert, and the loser would hear False for a lease its own process holds.
        self.taking = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._renew, name="ember-leases", daemon=True)
        self.thread.start()

    def hold(self, kind, name):
        """True when this process holds lease (``kind``, ``name``): one it holds (renewed by the thread), or one
        it takes now."""
        with self.guard:
            if (kind, name) in self.held:
                return True
        with self.taking:
            with self.guard:
                if (kind, name) in self.held:
                    return True  # taken by another thread while this one waited
            try:
                held = take(self.db, kind, name, self.holder, self.lease_s)
            except EmberError:
                held = False  # the database is down: no shared work until it answers
            with self.guard:
                (self.held.add if held else self.held.discard)((kind, name))
        return held

    def _renew(self):
        while not self.stop.wait(self.lease_s / 3):
            with self.guard:
                held = sorted(self.held)
            for kind, name in held:
                try:
                    if not renew(self.db, kind, name, self.holder, self.lease_s):
                        with self.guard:
                            self.held.discard((kind, name))
                except EmberError:
                    continue

    def close(self):
        """Stop renewing and give every lease back (a host stopping hands its work on at once)."""
        self.stop.set()
        with self.guard:
            held, self.held = sorted(self.held), set()
        for kind, name in held:
            with contextlib.suppress(EmberError):
                release(self.db, kind, name, self.holder)
