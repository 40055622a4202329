"""A record verified while it streams (service.md §3), in a verifying process of its own.

The endpoint reads the request body chunk by chunk (``body.body_chunks``) and hands each chunk to a
``VerifyingProcess``: in that process (one per upload, at a lower priority than the server's) an ``Upload``
writes the bytes, as sent, to a temporary file of the record store and feeds them through the engine's push
form (``AuthenticationStream``: decompression, the board's scenario, the path's seed expected).  At the
first refusal verification stops and the temporary file goes; the rest of the body is only counted.  A key
that already holds an accepted record is only compared with it as it streams (``ComparisonStream``), never
verified again: 409 at the first byte past its length or different from it.  The bytes as sent are counted
against ``max_record_bytes`` here, in the server's process, and nowhere else.

The pipe between the two processes carries the messages declared by ``Call`` and ``Answer``.  Each server
process keeps one verifying process started ahead (``Spare``): forked, at its lower priority and waiting for
its ``START``, it is handed to the next upload, and the next one is started meanwhile.
"""

import concurrent.futures
import contextlib
import enum
import os
import threading
import time

from ...canonical import one_line
from ...engine.authenticate import AuthenticationStream, ComparisonStream
from ...errors import EmberError, RecordStoreFullError
from ..errors import CLOSE, RETRY_AFTER, ServiceRefusal

#: How much lower a verifying process runs than the server's own: verification is the CPU-bound work, and
#: with it in the server's processes every request waited for their interpreter lock (p99 of a board's
#: JSON was hundreds of milliseconds during uploads); the kernel now serves requests first.
VERIFY_NICE = 10
#: How long a verifying process may take to leave once told to (it then is killed).
VERIFIER_EXIT_S = 5.0


class Call(enum.Enum):
    """What the server process sends its verifying process: ``(call, argument)``.  Each but ``END`` is
    answered ``(value, failure, (refusal, busy))``, ``failure`` None or a tuple led by an ``Answer``."""

    START = "start"  # argument (scenario, seed, limits, store, known); value: the temporary file's path or None
    FEED = "feed"  # argument: a chunk of the body
    FINISH = "finish"  # value: ``Upload.finish()``'s
    COMMIT = "commit"  # argument: the record's SHA-256; value: its stored name
    END = "end"  # not answered: the process discards what it has not committed and exits


class Answer(enum.Enum):
    """What a verifying process sends back: a failure of a ``Call``, or the one answer of ``in_process``."""

    VALUE = "value"  # (VALUE, the value): in_process only
    FULL = "full"  # (FULL, errno, strerror, filename): the record store is full
    REFUSAL = "refusal"  # (REFUSAL, status, message, extra, headers): a ServiceRefusal
    DEFECT = "defect"  # (DEFECT, "Type: message"): a defect; the server answers 500 and the process ends


def _refusal(exc):
    return (Answer.REFUSAL, exc.status, str(exc), exc.extra, exc.headers)


def _raise(failure):
    """Raise in the server's process what a verifying process's ``failure`` says it raised."""
    if failure[0] is Answer.FULL:
        raise RecordStoreFullError(*failure[1:])
    if failure[0] is Answer.REFUSAL:
        raise ServiceRefusal(failure[1], failure[2], failure[3], headers=failure[4])
    raise RuntimeError(f"the verifying process failed: {failure[1]}")


class Upload:
    """The verification of one body: ``feed(chunk)``, then ``finish()`` (in a ``VerifyingProcess``)."""

    def __init__(self, scenario, seed, limits, store=None, known=None):
        self.known = known  # (stored file, its SHA-256, the 409's message) of the key's accepted record
        self.handle = None
        if known is None:
            self.stream = AuthenticationStream(scenario, seed, limits.max_decompressed_bytes)
        else:
            self.handle = open(known[0], "rb")  # noqa: SIM115 (closed by finish or discard)
            self.stream = ComparisonStream(self.handle)
        self.temp = store.temporary() if known is None else None
        self.refusal = None
        self.busy = 0.0  # wall time spent verifying: the row's elapsed_s

    def _other(self):
        """A re-upload that is not the accepted record: 409 now, the rest of its body unread."""
        self.discard()
        return ServiceRefusal(409, self.known[2], headers=CLOSE)

    @contextlib.contextmanager
    def _verifying(self):
        """The block's time counted in ``busy``; a full store discards what was written and is raised; the
        engine's refusal is kept (``refusal``), or for a re-upload of the accepted record raised as 409."""
        started = time.perf_counter()
        try:
            yield
        except RecordStoreFullError:
            self.discard()
            raise
        except EmberError as exc:
            if self.known is not None:
                raise self._other() from None
            self.refuse(exc)
        finally:
            self.busy += time.perf_counter() - started

    def feed(self, chunk):
        if self.refusal is not None:
            return  # refused: the rest of the body is only drained
        with self._verifying():
            if self.temp is not None:
                self.temp.write(chunk)
            self.stream.feed(chunk)

    def refuse(self, exc):
        self.refusal = one_line(exc)
        self.discard()

    def finish(self):
        """(metrics dict, sha256) of an accepted record, or (None, sha256) when it is the key's accepted record
        again; None if refused."""
        if self.refusal is not None:
            return None
        with self._verifying():
            if self.known is not None:
                self.stream.close()
                self.discard()
                return None, self.known[1]
            metrics, sha = self.stream.close()
            return metrics.to_dict(), sha
        return None  # refused as it closed

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
            if call is Call.START:
                work = Upload(*argument)
                value = None if work.temp is None else work.temp.path  # for the server to remove if this dies
            elif call is Call.FEED:
                work.feed(argument)
            elif call is Call.FINISH:
                value = work.finish()
            elif call is Call.COMMIT:
                value = work.commit(argument)
            else:
                break
        except RecordStoreFullError as exc:
            failure = (Answer.FULL, exc.errno, exc.strerror, exc.filename)
        except ServiceRefusal as exc:
            failure = _refusal(exc)
        except Exception as exc:  # noqa: BLE001 (a defect: the server answers 500 and this process ends)
            failure = (Answer.DEFECT, f"{type(exc).__name__}: {exc}")
        state = (None, 0.0) if work is None else (work.refusal, work.busy)
        try:
            connection.send((value, failure, state))
        except OSError:
            break
        if failure is not None and failure[0] is Answer.DEFECT:
            break
    if work is not None:
        work.discard()
    connection.close()


def _started(context):
    """A verifying process started and waiting for its ``START``: (the process, this end of its pipe)."""
    connection, theirs = context.Pipe()
    process = context.Process(target=_verifier, args=(theirs,), name="ember-verify", daemon=True)
    try:
        process.start()
    finally:
        theirs.close()
    return process, connection


def _waiting(process, connection):
    """Whether a process started ahead still waits for its ``START``: alive, and nothing on its pipe (it sends
    nothing before it; a readable pipe is its end, closed)."""
    try:
        return process.is_alive() and not connection.poll(0)
    except OSError:
        return False


def _end(process, connection):
    """End a process that has no upload (a spare not used): told to, then waited for, killed if it must be."""
    with contextlib.suppress(OSError):
        connection.send((Call.END, None))
    connection.close()
    process.join(VERIFIER_EXIT_S)
    if process.exitcode is None:
        process.kill()
        process.join(VERIFIER_EXIT_S)


class Spare:
    """The verifying process a server process keeps started ahead of its next upload (``context``: the
    verifiers' multiprocessing context).

    Starting one is a fork by the fork server and the child's start-up, a few milliseconds at best and
    a tenth of a second or more on a loaded machine (the child runs at nice 10): ``take`` hands over the
    one started ahead and starts the next in a thread of its own.  A spare has received nothing: each
    serves one upload and ends with it, never another.  It takes no verification slot; only an upload
    does.  ``open`` starts the first (the application's start-up, which waits for it), ``close`` ends the
    one waiting (its shut-down); without ``open`` (an application never started, as in-process tests make it) every
    upload starts its own.
    """

    def __init__(self, context):
        self.context = context
        self.lock = threading.Lock()
        self.ready = None  # (process, connection) waiting for its START
        self.starter = None  # the thread that starts the next, while open

    def open(self):
        """Start the first spare, and wait for it: a server answers once it has one, however long the fork
        server takes to start (its imports: a second or more on a loaded machine)."""
        with self.lock:
            self.starter = concurrent.futures.ThreadPoolExecutor(1, "ember-spare")
        self._make()

    def _start_next(self):
        with self.lock:
            if self.starter is not None:
                self.starter.submit(self._make)

    def _make(self):
        with self.lock:
            if self.starter is None or self.ready is not None:
                return  # closed, or a spare waits already: concurrent uploads queue a start each
        started = _started(self.context)
        with self.lock:
            if self.starter is not None and self.ready is None:
                self.ready, started = started, None
        if started is not None:
            _end(*started)  # closed meanwhile, or one is waiting already

    def take(self):
        """(process, connection, ahead): the spare when it still waits (``ahead``), else one started now; the
        next spare starts meanwhile."""
        with self.lock:
            found, self.ready = self.ready, None
        self._start_next()
        if found is not None and _waiting(*found):
            return (*found, True)
        if found is not None:
            _end(*found)  # killed while it waited: it had nothing, and costs this upload nothing
        return (*_started(self.context), False)

    def close(self):
        with self.lock:
            starter, self.starter = self.starter, None
            found, self.ready = self.ready, None
        if starter is not None:
            starter.shutdown(wait=True)
        if found is not None:
            _end(*found)


class VerifyingProcess:
    """An ``Upload`` run in a process of its own (``context``: a multiprocessing context), driven by calls
    over a pipe: ``feed``, ``finish``, ``commit``, ``discard``, and the upload's ``refusal``, ``sent``, ``busy``.

    ``feed`` does not wait for the process: chunks go down the pipe while it verifies the ones before
    (a round trip a chunk cost a quarter of an upload's time), at most ``IN_FLIGHT`` unanswered, and
    its answers are taken as they come; a refusal is known a few chunks late, and the rest is only
    counted.  The other calls wait for their answer (a pool thread waits, without the interpreter
    lock).  The process dying (killed, out of memory) is a 503: nothing was accepted, send it again.
    The process is the ``Spare``'s (``spare``); one started ahead that died before its ``START`` was
    answered had nothing of the upload, and a process started now takes its place.
    """

    IN_FLIGHT = 8

    def __init__(self, spare, scenario, seed, limits, store=None, known=None):
        self.refusal, self.sent, self.busy = None, 0, 0.0
        # A comparison is cheap and its 409 must not wait for more of the body: each chunk waits for its answer.
        self.in_flight = 1 if known is not None else self.IN_FLIGHT
        self.max_bytes = limits.max_record_bytes
        self.temp_path = None  # the process's temporary file, removed here if the process dies before it can
        self.pending = 0  # calls sent and not answered yet
        self.died = False
        self.process, self.connection, ahead = spare.take()
        start = (scenario, seed, limits, store, known)
        try:
            self.temp_path = self._call(Call.START, start)
        except ServiceRefusal:
            if not (ahead and self.died):
                raise
            self.process, self.connection = _started(spare.context)
            self.pending, self.died = 0, False
            self.temp_path = self._call(Call.START, start)

    def _stopped(self):
        self.died = True
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
        self.refusal, self.busy = state
        if failure is None:
            return value
        self.close()
        _raise(failure)

    def _call(self, call, argument=None):
        self._send(call, argument)
        value = None
        while self.pending:
            value = self._answer()
        return value

    def feed(self, chunk):
        """Send ``chunk`` on (413 past ``max_record_bytes`` as sent); False once the rest of the body need not
        be read: refused, and drained as far as the limit allows."""
        self.sent += len(chunk)
        if self.refusal is None:
            if self.sent > self.max_bytes:
                self.close()
                raise ServiceRefusal(413, f"the record is longer than {self.max_bytes:,} bytes as sent", headers=CLOSE)
            while self.pending >= self.in_flight or (self.pending and self.connection.poll(0)):
                self._answer()
            self._send(Call.FEED, chunk)
            if self.in_flight == 1:
                self._answer()
        return self.refusal is None or self.sent <= self.max_bytes

    def finish(self):
        return self._call(Call.FINISH)

    def commit(self, sha256):
        return self._call(Call.COMMIT, sha256)

    def discard(self):
        """End the process: what it has not committed goes with it (its temporary file)."""
        self.close()

    def close(self, died=False):
        """Tell the process to end (it discards what it has not committed, and exits by itself); when it
        ``died`` instead, make sure it is gone and remove its temporary file."""
        if self.connection is None:
            return
        with contextlib.suppress(OSError):
            self.connection.send((Call.END, None))
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
        answer = (Answer.VALUE, function(*args))
    except ServiceRefusal as exc:
        answer = _refusal(exc)
    except Exception as exc:  # noqa: BLE001 (a defect: the server answers 500)
        answer = (Answer.DEFECT, f"{type(exc).__name__}: {exc}")
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
        answer = None
    finally:
        mine.close()
        process.join(VERIFIER_EXIT_S)
        if process.exitcode is None:
            process.kill()
            process.join(VERIFIER_EXIT_S)
    if answer is None:
        raise ServiceRefusal(503, "the check stopped; nothing was accepted: send it again", headers=RETRY_AFTER)
    if answer[0] is Answer.VALUE:
        return answer[1]
    _raise(answer)
