"""One upload, verified while it streams (service.md §3).

The endpoint reads the request body chunk by chunk (``body_chunks``,
which ends a body that is too slow or too long with 408, or too big with
413) and hands each chunk to an ``Upload`` in a verifying process of its
own (``VerifyingProcess``, one per upload, at a lower priority than the
server's): the bytes, as sent, go to a temporary file of the
record store and through the engine's push form
(``AuthenticationStream``: decompression, the board's scenario, the
path's seed expected).  At the first refusal verification stops and the
temporary file goes; the rest of the body is only counted.  A key that
already holds an accepted record is only compared with it as it streams
(``ComparisonStream``), never verified again: 409 at the first byte past
its length or different from it.  Limits counted in the database (``Slots``) hold across
server processes.
"""

import asyncio
import contextlib
import os
import time
import uuid

import sqlalchemy as sa

from ..engine import AuthenticationStream, ComparisonStream
from ..errors import EmberError, RecordStoreFullError, ServiceRefusal
from . import audit, tables

RETRY_AFTER = {"Retry-After": "5"}
CLOSE = {"Connection": "close"}
#: How much lower a verifying process runs than the server's own: verification is the CPU-bound work, and
#: with it in the server's processes every request waited for their interpreter lock (p99 of a board's
#: JSON was hundreds of milliseconds during uploads); the kernel now serves requests first.
VERIFY_NICE = 10
#: How long a verifying process may take to leave once told to (it then is killed).
VERIFIER_EXIT_S = 5.0
#: Bundle uploads in flight per team (service.md §9).
BUNDLES_PER_TEAM = 1
#: The row ``Slots`` locks (tables.locks).
SLOTS_LOCK = "slots"


def one_line(text):
    return " ".join(str(text).split())


class Upload:
    """The verification of one body: ``feed(chunk)``, then ``finish()`` (in a ``VerifyingProcess``)."""

    def __init__(self, scenario, seed, limits, store=None, known=None):
        self.max_bytes = limits.max_record_bytes
        self.known = known  # (stored file, its SHA-256, the 409's message) of the key's accepted record
        self.handle = None
        if known is None:
            self.stream = AuthenticationStream(scenario, seed, limits.max_decompressed_bytes)
        else:
            self.handle = open(known[0], "rb")  # noqa: SIM115 (closed by finish or discard)
            self.stream = ComparisonStream(self.handle)
        self.temp = store.temporary() if known is None else None
        self.refusal = None
        self.sent = 0
        self.busy = 0.0  # wall time spent verifying: the row's elapsed_s

    def _other(self):
        """A re-upload that is not the accepted record: 409 now, the rest of its body unread."""
        self.discard()
        return ServiceRefusal(409, self.known[2], headers=CLOSE)

    def feed(self, chunk):
        self.sent += len(chunk)
        if self.refusal is not None:
            return  # refused: the rest of the body is only drained
        if self.sent > self.max_bytes:
            self.discard()
            raise ServiceRefusal(413, f"the record is longer than {self.max_bytes:,} bytes as sent", headers=CLOSE)
        started = time.perf_counter()
        try:
            if self.temp is not None:
                self.temp.write(chunk)
            self.stream.feed(chunk)
        except RecordStoreFullError:
            self.discard()
            raise
        except EmberError as exc:
            if self.known is not None:
                raise self._other() from None
            self.refuse(exc)
        finally:
            self.busy += time.perf_counter() - started

    def refuse(self, exc):
        self.refusal = one_line(exc)
        self.discard()

    def finish(self):
        """(metrics dict, sha256) of an accepted record, or (None, sha256) when it is the key's accepted record
        again; None if refused."""
        if self.refusal is not None:
            return None
        started = time.perf_counter()
        try:
            if self.known is not None:
                self.stream.close()
                self.discard()
                return None, self.known[1]
            metrics, sha = self.stream.close()
            return metrics.to_dict(), sha
        except RecordStoreFullError:
            self.discard()
            raise
        except EmberError as exc:
            if self.known is not None:
                raise self._other() from None
            self.refuse(exc)
            return None
        finally:
            self.busy += time.perf_counter() - started

    def commit(self, sha256):
        """The verified bytes to their content address in the store; returns the stored name."""
        stored = self.temp.commit(sha256)
        self.temp = None
        return stored

    def discard(self):
        if self.temp is not None:
            self.temp.discard()
            self.temp = None
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _verifier(connection):
    """A verifying process: one ``Upload``, made and driven by its server process's calls (``VerifyingProcess``)."""
    with contextlib.suppress(OSError):
        os.nice(VERIFY_NICE)
    work = None
    while True:
        try:
            call, argument = connection.recv()
        except (EOFError, OSError):
            break  # the server went away: what was received is a temporary file, swept at the next start
        value, failure = None, None
        try:
            if call == "start":
                work = Upload(*argument)
                value = None if work.temp is None else work.temp.path  # for the server to remove if this dies
            elif call == "feed":
                work.feed(argument)
            elif call == "finish":
                value = work.finish()
            elif call == "commit":
                value = work.commit(argument)
            else:
                break
        except RecordStoreFullError as exc:
            failure = ("full", exc.errno, exc.strerror, exc.filename)
        except ServiceRefusal as exc:
            failure = ("refusal", exc.status, str(exc), exc.headers)
        except Exception as exc:  # noqa: BLE001 (a defect: the server answers 500 and this process ends)
            failure = ("defect", f"{type(exc).__name__}: {exc}")
        state = (None, 0, 0.0) if work is None else (work.refusal, work.sent, work.busy)
        try:
            connection.send((value, failure, state))
        except OSError:
            break
        if failure is not None and failure[0] == "defect":
            break
    if work is not None:
        work.discard()
    connection.close()


class VerifyingProcess:
    """An ``Upload`` run in a process of its own (``context``: a multiprocessing context), driven by calls
    over a pipe: the same ``feed``, ``finish``, ``commit``, ``discard`` and ``refusal``, ``sent``, ``busy``.

    ``feed`` does not wait for the process: chunks go down the pipe while it verifies the ones before
    (a round trip a chunk cost a quarter of an upload's time), at most ``IN_FLIGHT`` unanswered, and
    its answers are taken as they come; a refusal is known a few chunks late, and the rest is only
    counted.  The other calls wait for their answer (a pool thread waits, without the interpreter
    lock).  The process dying (killed, out of memory) is a 503: nothing was accepted, send it again.
    """

    IN_FLIGHT = 8

    def __init__(self, context, scenario, seed, limits, store=None, known=None):
        self.refusal, self.sent, self.busy = None, 0, 0.0
        # A comparison is cheap and its 409 must not wait for more of the body: each chunk waits for its answer.
        self.in_flight = 1 if known is not None else self.IN_FLIGHT
        self.max_bytes = limits.max_record_bytes
        self.temp_path = None  # the process's temporary file, removed here if the process dies before it can
        self.pending = 0  # calls sent and not answered yet
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_verifier, args=(theirs,), name="ember-verify", daemon=True)
        try:
            self.process.start()
        finally:
            theirs.close()
        self.temp_path = self._call("start", (scenario, seed, limits, store, known))

    def _stopped(self):
        self.close(died=True)
        return ServiceRefusal(
            503, "the verification of this record stopped; nothing was accepted: send it again",
            headers={**RETRY_AFTER, **CLOSE},
        )  # fmt: skip

    def _send(self, call, argument=None):
        try:
            self.connection.send((call, argument))
        except OSError:
            raise self._stopped() from None
        self.pending += 1

    def _answer(self):
        """The next answer's value (every answer before it taken); raises what the process raised."""
        try:
            value, failure, state = self.connection.recv()
        except (EOFError, OSError):
            raise self._stopped() from None
        self.pending -= 1
        self.refusal, _, self.busy = state
        if failure is None:
            return value
        self.close()
        if failure[0] == "full":
            raise RecordStoreFullError(*failure[1:])
        if failure[0] == "refusal":
            raise ServiceRefusal(failure[1], failure[2], headers=failure[3])
        raise RuntimeError(f"the verifying process failed: {failure[1]}")

    def _call(self, call, argument=None):
        self._send(call, argument)
        value = None
        while self.pending:
            value = self._answer()
        return value

    def feed(self, chunk):
        self.sent += len(chunk)
        if self.refusal is not None:
            return  # refused: the rest of the body is only drained
        if self.sent > self.max_bytes:
            self.close()
            raise ServiceRefusal(413, f"the record is longer than {self.max_bytes:,} bytes as sent", headers=CLOSE)
        while self.pending >= self.in_flight or (self.pending and self.connection.poll(0)):
            self._answer()
        self._send("feed", chunk)
        if self.in_flight == 1:
            self._answer()

    def finish(self):
        return self._call("finish")

    def commit(self, sha256):
        return self._call("commit", sha256)

    def discard(self):
        """End the process: what it has not committed goes with it (its temporary file)."""
        self.close()

    def close(self, died=False):
        """Tell the process to end (it discards what it has not committed, and exits by itself); when it
        ``died`` instead, make sure it is gone and remove its temporary file."""
        if self.connection is None:
            return
        with contextlib.suppress(OSError):
            self.connection.send(("end", None))
        self.connection.close()
        self.connection = None
        if not died:
            return  # not waited for: the answer need not wait for an exit (the fork server reaps it)
        self.process.join(VERIFIER_EXIT_S)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(VERIFIER_EXIT_S)
        if self.temp_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temp_path)  # killed with its file open: nothing of this upload stays


def _run_once(connection, function, args):
    """A verifying process that runs one call (``in_process``) and sends back its value or its refusal."""
    with contextlib.suppress(OSError):
        os.nice(VERIFY_NICE)
    try:
        answer = ("value", function(*args))
    except ServiceRefusal as exc:
        answer = ("refusal", exc.status, str(exc), exc.extra, exc.headers)
    except Exception as exc:  # noqa: BLE001 (a defect: the server answers 500)
        answer = ("defect", f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):
        connection.send(answer)
    connection.close()


def in_process(context, function, *args):
    """``function(*args)`` in a verifying process of its own (``context``: the verifiers' multiprocessing
    context), as bundles are checked: never in a server's thread.  Its death is a 503."""
    mine, theirs = context.Pipe(duplex=False)
    process = context.Process(target=_run_once, args=(theirs, function, args), name="ember-verify", daemon=True)
    try:
        process.start()
    finally:
        theirs.close()
    try:
        answer = mine.recv()
    except (EOFError, OSError):
        answer = ("stopped",)
    finally:
        mine.close()
        process.join(VERIFIER_EXIT_S)
        if process.exitcode is None:
            process.kill()
            process.join(VERIFIER_EXIT_S)
    if answer[0] == "value":
        return answer[1]
    if answer[0] == "refusal":
        raise ServiceRefusal(answer[1], answer[2], answer[3], headers=answer[4])
    if answer[0] == "defect":
        raise RuntimeError(f"the verifying process failed: {answer[1]}")
    raise ServiceRefusal(503, "the check stopped; nothing was accepted: send it again", headers=RETRY_AFTER)


async def body_chunks(request, limits):
    """The request body's chunks as they arrive; 408 for a body that stalls or takes too long in all.

    A body must send ``body_window_bytes`` within every ``body_window_s`` the server spends waiting for it
    (the time spent verifying does not count), and end within ``body_max_s``.
    """
    started = time.monotonic()
    waited = window_start = 0.0
    window_bytes = 0
    while True:
        left = min(limits.body_window_s - (waited - window_start), limits.body_max_s - (time.monotonic() - started))
        before = time.monotonic()
        try:
            message = await asyncio.wait_for(request.receive(), timeout=max(left, 0.001))
        except asyncio.TimeoutError:
            if time.monotonic() - started >= limits.body_max_s:
                reason = f"the body took more than {limits.body_max_s} s in all"
            else:
                reason = f"the body sent under {limits.body_window_bytes:,} bytes in {limits.body_window_s} s"
            raise ServiceRefusal(408, reason, headers=CLOSE) from None
        waited += time.monotonic() - before
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the client went away")
        body = message.get("body", b"")
        window_bytes += len(body)
        if window_bytes >= limits.body_window_bytes:
            window_start, window_bytes = waited, 0
        if body:
            yield body
        if not message.get("more_body", False):
            return


class Slots:
    """Limits counted in the database across server processes (service.md §3, §9): per team, its uploads and
    its bundle uploads in flight, and its verifications; on the server, all verifications.

    Every count and the insert it allows are one transaction holding the ``slots`` lock row (``FOR UPDATE``
    on PostgreSQL; on SQLite the transaction's ``BEGIN IMMEDIATE``): two server processes never both count
    under a limit and both take the last slot.
    """

    def __init__(self, db, limits):
        self.db = db
        self.limits = limits

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
            for kind in kinds:
                refusal = self._refusal(connection, team, kind, taken)
                if refusal is not None:
                    raise ServiceRefusal(*refusal, headers=RETRY_AFTER)
                taken.append(kind)
            for kind in taken:
                ids.append(str(uuid.uuid4()))
                connection.execute(
                    sa.insert(tables.in_flight).values(id=ids[-1], team_id=team.id, kind=kind, started_at=audit.now())
                )
        return ids

    def give_back(self, taken):
        with contextlib.suppress(EmberError), self.db.transaction() as connection:
            connection.execute(sa.delete(tables.in_flight).where(tables.in_flight.c.id.in_(taken)))


def clear_slots(db):
    """At start (the ``serve`` parent): no upload is in flight."""
    with db.transaction() as connection:
        connection.execute(sa.delete(tables.in_flight))
