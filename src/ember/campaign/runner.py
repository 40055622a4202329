"""Runners: local worker processes or a Dask cluster, behind one driving loop.

``drive`` submits episodes, takes them back as they complete and hands each
row to the store once.  A runner only knows how to submit one attempt, wait
for the first to finish and say what became of it:

- ``("row", row)``: the attempt ran (its row may be ``failed``);
- ``("error", reason)``: the engine itself failed the task (a failed row);
- ``("lost", charged)``: its worker was lost; ``charged`` says whether the
  attempt counts against ``1 + retries`` (an episode that had not started,
  or that ran beside the one that killed the pool, is not charged).

Local processes use ``concurrent.futures.ProcessPoolExecutor``; Dask uses a
``distributed.Client`` with its own futures and ``wait``, as Dask users
expect.  Both return the same rows: the episode function is the same.
"""

import collections
import concurrent.futures
import hashlib
import multiprocessing
import os
import queue
import signal

from ..canonical import canonical_json
from .episode import run_task

WORKER_LOST = "worker lost"


def _lost_row(task):
    return {
        "scenario_id": task["scenario_id"],
        "scenario_hash": task["scenario_hash"],
        "seed": task["seed"],
        "policy": task["policy"]["name"],
        "status": "failed",
        "error": WORKER_LOST,
        "metrics": None,
        "steps": None,
        "record": None,
        "record_sha256": None,
        "elapsed_s": 0.0,
    }


# -- local processes ------------------------------------------------------------

_started = None  # in a worker: the queue on which each attempt announces (key, pid) as it starts


def _init_worker(started):
    global _started
    _started = started
    # Ctrl-C reaches the whole process group: the parent alone decides, and ends the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local_entry(task, key):
    _started.put((key, os.getpid()))
    return run_task(task)


class LocalRunner:
    """Episodes in local worker processes (spawned: they inherit no lock, no thread, no open file)."""

    def __init__(self, workers):
        self.workers = workers
        self.window = workers * 2
        self._context = multiprocessing.get_context("spawn")
        self._started = self._context.SimpleQueue()
        self._executor = None
        self._processes = {}
        self._running = {}  # key -> pid of the worker that announced it

    def _pool(self):
        if self._executor is None:
            self._executor = concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=self._context, initializer=_init_worker, initargs=(self._started,)
            )
            # The pool's own pid -> Process map: after a break it tells the killed worker
            # (exit by its signal) from the ones the pool then terminated itself (SIGTERM).
            self._processes = self._executor._processes
        return self._executor

    def submit(self, task, key, attempt):
        return self._pool().submit(_local_entry, task, key)

    def wait(self, futures):
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
        return done

    def outcomes(self, done, keys):
        """(key, outcome) for each finished future; a broken pool is examined once for all its futures."""
        results, lost = [], []
        for future in done:
            try:
                results.append((keys[future], ("row", future.result())))
            except concurrent.futures.process.BrokenProcessPool:
                lost.append(keys[future])
        if lost:
            charged = self._victims(lost)
            results.extend((key, ("lost", key in charged)) for key in lost)
        return results

    def _victims(self, lost):
        self._drain()
        processes, self._processes = self._processes, {}
        self._executor.shutdown(wait=True)
        self._executor = None
        started = [key for key in lost if key in self._running]
        killed = []
        for key in started:
            process = processes.get(self._running[key])
            code = None if process is None else process.exitcode
            if code != -signal.SIGTERM:
                killed.append(key)
        for key in lost:
            self._running.pop(key, None)
        # Never retry forever: if no worker looks killed from outside, every started episode is charged.
        return set(killed or started)

    def _drain(self):
        while True:
            try:
                if self._started.empty():
                    return
                key, pid = self._started.get()
            except (OSError, EOFError, queue.Empty):
                return
            self._running[key] = pid

    def finished(self, key):
        self._running.pop(key, None)

    def close(self, terminate=False):
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if terminate:
            for process in list(self._processes.values()):
                if process.is_alive():
                    process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)


# -- Dask ---------------------------------------------------------------------------


def _dask_key(task, attempt):
    digest = hashlib.sha256(
        canonical_json([task["campaign"], task["policy"], task["scenario_hash"], task["seed"], task["results"]])
    ).hexdigest()[:32]
    return f"ember-episode-{digest}-{attempt}"


class DaskRunner:
    """Episodes on an existing Dask distributed cluster (``--scheduler ADDRESS``)."""

    def __init__(self, address):
        from distributed import Client, as_completed  # the 'dask' extra, imported only here

        self.client = Client(address, set_as_default=False)
        workers = len(self.client.scheduler_info().get("workers", {})) or 1
        self.window = max(2, 2 * workers)
        self._completed = as_completed(loop=self.client.loop)

    def submit(self, task, key, attempt):
        # A deterministic key per attempt: the same attempt submitted twice runs once;
        # a retry after a lost worker is a new attempt with a new key.
        future = self.client.submit(run_task, task, key=_dask_key(task, attempt), pure=False, retries=0)
        self._completed.add(future)
        return future

    def wait(self, futures):
        return {next(self._completed)}

    def outcomes(self, done, keys):
        from distributed import KilledWorker

        results = []
        for future in done:
            key = keys[future]
            if future.status == "finished":
                results.append((key, ("row", future.result())))
                continue
            try:
                future.result()
            except KilledWorker:
                results.append((key, ("lost", True)))
            except concurrent.futures.CancelledError:
                results.append((key, ("lost", True)))
            except Exception as exc:  # run_task returns failures as rows: this is Dask's own error
                results.append((key, ("error", f"dask: {type(exc).__name__}: {exc}")))
            future.release()
        return results

    def finished(self, key):
        pass

    def close(self, terminate=False):
        self.client.close()


# -- the loop -----------------------------------------------------------------------


def drive(runner, tasks, retries, on_row):
    """Run every task (key -> task) to one row each; ``on_row(row)`` is called once per key.

    A lost attempt is tried again until it has been charged ``1 + retries``
    times, then gets a failed row ``worker lost``.  A result for a key that
    already has its row (a rerun of a finished task) is dropped.
    """
    pending = collections.deque(tasks)
    attempts = collections.Counter()
    charged = collections.Counter()
    in_flight = {}
    written = set()
    while pending or in_flight:
        while pending and len(in_flight) < runner.window:
            key = pending.popleft()
            attempts[key] += 1
            in_flight[runner.submit(tasks[key], key, attempts[key])] = key
        done = runner.wait(in_flight)
        keys = {future: in_flight.pop(future) for future in done}
        retry = []
        for key, (kind, value) in runner.outcomes(done, keys):
            runner.finished(key)
            if key in written:
                continue
            if kind in ("row", "error"):
                written.add(key)
                on_row(value if kind == "row" else dict(_lost_row(tasks[key]), error=" ".join(value.split())))
                continue
            if value:
                charged[key] += 1
            if charged[key] >= 1 + retries:
                written.add(key)
                on_row(_lost_row(tasks[key]))
            else:
                retry.append(key)
        pending.extendleft(reversed(retry))
