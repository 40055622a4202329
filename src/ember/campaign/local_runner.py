"""Local worker processes: a ``concurrent.futures.ProcessPoolExecutor`` EMBER can account for.

The pool schedules; what EMBER needs to know of its workers, they tell it
themselves, on an *events pipe* of fixed-size records (one ``os.write``
each, so atomic, lock-free and safe from a signal handler): a worker is
ready (its pid), an attempt started on it (ticket, pid), an episode
session began or was ended, a worker was told to terminate.  Nothing
private of the standard library is read.

A worker (``_init_worker``):

- leaves the terminal's process group and ignores SIGINT: Ctrl-C reaches
  the command alone, which ends its workers itself;
- dies with the command: the kernel sends it SIGTERM when the command
  dies (``PR_SET_PDEATHSIG``), however it dies; its SIGTERM handler ends
  the episode session it is watching, then exits at once;
- is a child subreaper: orphans of an episode come back to it, and are
  ended with the episode (``watch.py``);
- has its standard output on /dev/null: nothing a worker or an episode
  writes can reach the leaderboard.

The command is a child subreaper while it runs local workers: when a
worker is killed, its episode process dies with it, and what that episode
left in sessions of their own comes to the command, which ends it as soon
as the pool is retired (``processes.end_orphans``).

A killed worker breaks the whole pool (every pending future fails with
``BrokenProcessPool``, at ``submit`` too).  The runner then takes every
future of the pool, lets the pool end (bounded: stragglers are
terminated, then killed), ends the episode sessions of dead workers, and
charges only the attempts whose worker died without being told to (the
pool tells the others with SIGTERM, which they report).  If every dead
worker reports SIGTERM, every started attempt is charged, so nothing
retries for ever; if workers keep dying before they are ready, the run
stops with an error.
"""

import atexit
import concurrent.futures
import contextlib
import itertools
import multiprocessing
import os
import signal
import struct
import threading
import time
from multiprocessing import resource_tracker

from ..errors import CampaignError, ResultsError, ResultsIOError
from . import processes
from .runner import Runner

_EVENT = struct.Struct("<qqq")
_READY, _STARTED, _SESSION, _SESSION_ENDED, _TERMINATED = range(1, 6)
#: A pool being closed normally has this long before its workers are terminated, then killed.
CLOSE_GRACE_S = 10.0
KILL_GRACE_S = 2.0
#: A pool whose workers die before any is ready this many times in a row stops the run.
MAX_FRUITLESS_BREAKS = 5
#: Where there is no parent-death signal, how often a worker looks at its parent.
PARENT_POLL_S = 0.5


# -- in a worker -----------------------------------------------------------------------

_events = None  # the write end of the events pipe (a multiprocessing Connection)
_host = None


def _event(kind, a, b=0):
    with contextlib.suppress(OSError, AttributeError):  # the command has gone: its death signal ends us
        os.write(_events.fileno(), _EVENT.pack(kind, a, b))


def _announce(leader, live):
    _event(_SESSION if live else _SESSION_ENDED, leader, os.getpid())


def _init_worker(events, parent):
    # The episode's code (engine, metrics, simulator; the watcher with the first agent or python
    # episode) is imported in the worker: the command that starts the pool never runs an episode.
    from .watcher_host import WatcherHost

    global _events, _host
    _events = events
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgrp()
    _host = WatcherHost(adopted=processes.become_subreaper(), announce=_announce)
    if _host.adopted:
        # A worker that ends (its pool shut down) takes along whatever its episodes left behind.
        atexit.register(processes.end_descendants)
    signal.signal(signal.SIGTERM, _on_terminate)
    if processes.set_parent_death_signal(signal.SIGTERM):
        if os.getppid() != parent:
            os._exit(1)  # the command died before we asked to die with it
    else:
        threading.Thread(target=_exit_with_parent, args=(parent,), name="ember-parent-watch", daemon=True).start()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    _event(_READY, os.getpid())


def _on_terminate(signum, frame):
    leader = _host.leader if _host is not None else None
    if leader is not None:
        processes.end_session(leader, adopted=_host.adopted, deadline_s=1.0)
    _event(_TERMINATED, os.getpid())
    os._exit(1)


def _exit_with_parent(parent):
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)


def _local_entry(task, ticket):
    from .attempt import run_task_line  # the worker's, imported once (see _init_worker)

    _event(_STARTED, ticket, os.getpid())
    return run_task_line(task, _host)


# -- in the command ----------------------------------------------------------------------


class LocalRunner(Runner):
    """Episodes in local worker processes (spawned: they inherit no lock, no thread, no open file)."""

    def __init__(self, workers):
        self.workers = workers
        self.window = workers * 2
        self._context = multiprocessing.get_context("spawn")
        self._events_r, self._events_w = self._context.Pipe(duplex=False)
        os.set_blocking(self._events_r.fileno(), False)
        self._pending = b""
        self._executor = None
        self._tickets = itertools.count(1)
        self._futures = {}  # future -> ticket, for the current pool
        self._started = {}  # ticket -> pid of the worker that started it
        self._ready = set()  # pids of the current pool's workers that said they were ready
        self._terminated = set()  # pids that reported being told to terminate
        self._sessions = {}  # leader -> worker pid: episode sessions not yet ended
        self._dead = set()  # the workers of the pool retired last
        self._fruitless = 0
        # The command adopts the orphans of an episode whose worker died (its episode process dies
        # with the worker, and what it left would go to init); what it had before is not theirs.
        resource_tracker.ensure_running()  # the pool's own helper, started now so that it is kept
        self._keep = processes.children()
        self._adopting = not processes.is_subreaper() and processes.become_subreaper()

    # -- events ----------------------------------------------------------------------

    def _drain(self):
        while True:
            try:
                data = os.read(self._events_r.fileno(), 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                break
            self._pending += data
        size = _EVENT.size
        whole = len(self._pending) - len(self._pending) % size
        for offset in range(0, whole, size):
            kind, a, b = _EVENT.unpack_from(self._pending, offset)
            if kind == _READY:
                self._ready.add(a)
            elif kind == _STARTED:
                self._started[a] = b
            elif kind == _SESSION:
                self._sessions[a] = b
            elif kind == _SESSION_ENDED:
                self._sessions.pop(a, None)
            elif kind == _TERMINATED:
                self._terminated.add(a)
        self._pending = self._pending[whole:]

    # -- the pool ---------------------------------------------------------------------

    def _pool(self):
        if self._executor is None:
            self._executor = concurrent.futures.ProcessPoolExecutor(
                self.workers,
                mp_context=self._context,
                initializer=_init_worker,
                initargs=(self._events_w, os.getpid()),
            )
        return self._executor

    def submit(self, task, key, attempt):
        ticket = next(self._tickets)
        try:
            future = self._pool().submit(_local_entry, task, ticket)
        except (concurrent.futures.process.BrokenProcessPool, RuntimeError) as exc:
            # The pool broke since the last wait: this attempt is lost before it started (not charged).
            future = concurrent.futures.Future()
            future.set_exception(concurrent.futures.process.BrokenProcessPool(str(exc)))
        self._futures[future] = ticket
        return future

    def wait(self, futures):
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
        return done

    def outcomes(self, done):
        """(future, kind, value) for each finished future: kind "row", "error", "fatal" or "lost".

        A broken pool fails every future it holds: they are all taken at
        once, with one verdict on which attempts are charged, and the pool
        is replaced.
        """
        if any(_broken(future) for future in done):
            self._retire()
            done = [future for future in self._futures if future.done()]
            for future in list(self._futures):
                if not future.done():  # cannot happen once the pool has ended; never wait for it
                    future.set_exception(concurrent.futures.process.BrokenProcessPool("the pool ended"))
                    done.append(future)
        self._drain()
        results, lost = [], []
        for future in done:
            ticket = self._futures.pop(future)
            error = future.exception()
            if isinstance(error, concurrent.futures.process.BrokenProcessPool):
                lost.append((future, ticket))
                continue
            self._started.pop(ticket, None)
            if isinstance(error, (ResultsIOError, ResultsError)):
                results.append((future, "fatal", error))
            elif error is not None:  # run_task returns failures as rows: this is the pool's own error
                results.append((future, "error", f"{type(error).__name__}: {error}"))
            else:
                results.append((future, "row", future.result()))
        if lost:
            charged = self._charged([ticket for _, ticket in lost])
            results.extend((future, "lost", ticket in charged) for future, ticket in lost)
        return results

    def _charged(self, lost):
        started = {ticket: self._started.pop(ticket) for ticket in lost if ticket in self._started}
        killed = self._dead - self._terminated
        self._terminated.clear()
        if killed:
            # Only an attempt on a worker that died without being told to is charged
            # (none, if the killed worker was idle).
            return {ticket for ticket, pid in started.items() if pid in killed}
        return set(started)  # nobody looks killed from outside: charge every started attempt

    def _retire(self):
        """End the broken pool (bounded), and the episode sessions its workers left."""
        executor, self._executor = self._executor, None
        if executor is not None:
            # The pool is ending its workers itself (SIGTERM): give it the short grace only.
            self._stop(executor, terminate=False, grace=KILL_GRACE_S)
        self._drain()
        self._dead = set(self._ready)
        if not self._ready:
            self._fruitless += 1
            if self._fruitless >= MAX_FRUITLESS_BREAKS:
                raise CampaignError(
                    f"the local worker processes died {self._fruitless} times in a row before any was ready."
                )
        else:
            self._fruitless = 0
        self._ready = set()
        self._end_sessions()
        self._end_orphans()

    def _stop(self, executor, terminate, grace=CLOSE_GRACE_S):
        """Shut ``executor`` down, bounded: ``grace`` (after SIGTERM with ``terminate``), then SIGTERM, SIGKILL."""
        if terminate:
            self._signal_workers(signal.SIGTERM)
        stopper = threading.Thread(
            target=executor.shutdown, kwargs={"wait": True, "cancel_futures": True}, name="ember-pool-stop", daemon=True
        )
        stopper.start()
        stopper.join(KILL_GRACE_S if terminate else grace)
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if not stopper.is_alive():
                break
            self._signal_workers(signum)
            stopper.join(KILL_GRACE_S)

    def _signal_workers(self, signum):
        self._drain()
        for pid in self._ready:
            if processes.child_alive(pid):  # never a reused pid: only a live child of ours
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)

    def _end_sessions(self):
        self._drain()
        for leader in list(self._sessions):
            processes.end_session(leader)
            self._sessions.pop(leader, None)

    def _end_orphans(self):
        """End what the episodes of dead workers left with this process; with no pool running
        (every worker of ours has ended), any other child outside the command's session is such."""
        if self._adopting or processes.is_subreaper():
            processes.end_orphans(self._keep | {child.pid for child in multiprocessing.active_children()})

    def check_sandbox(self, files):
        """Local workers run on this machine, which the command has checked already (``evaluate``)."""

    def close(self, terminate=False):
        """Stop the workers (at once with ``terminate``) and end every episode session left; bounded."""
        executor, self._executor = self._executor, None
        self._futures = {}
        if executor is not None:
            self._stop(executor, terminate)
        self._end_sessions()
        self._end_orphans()
        if self._adopting:
            processes.stop_being_subreaper()
            self._adopting = False
        self._events_r.close()
        self._events_w.close()


def _broken(future):
    return isinstance(future.exception(), concurrent.futures.process.BrokenProcessPool)
