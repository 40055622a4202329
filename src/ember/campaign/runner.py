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
        self._futures = {}  # future -> key, for the current pool
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
        future = self._pool().submit(_local_entry, task, key)
        self._futures[future] = key
        return future

    def wait(self, futures):
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
        return done

    def outcomes(self, done):
        """(future, key, outcome) for each finished future.

        A broken pool fails every future it holds: they are all taken at once,
        with one verdict on which episode's worker was killed, and the pool
        is replaced.
        """
        if any(_broken(future) for future in done):
            everything = list(self._futures)
            concurrent.futures.wait(everything)  # the pool is broken: each fails or has finished
            done = everything
        results, lost = [], []
        for future in done:
            key = self._futures.pop(future)
            error = future.exception()
            if isinstance(error, concurrent.futures.process.BrokenProcessPool):
                lost.append((future, key))
            elif error is not None:  # run_task returns failures as rows: this is the pool's own error
                results.append((future, key, ("error", f"{type(error).__name__}: {error}")))
            else:
                results.append((future, key, ("row", future.result())))
        if lost:
            charged = self._victims([key for _, key in lost])
            results.extend((future, key, ("lost", key in charged)) for future, key in lost)
        return results

    def _victims(self, lost):
        self._drain()
        processes, self._processes = self._processes, {}
        self._executor.shutdown(wait=True)
        self._executor = None
        self._futures = {}
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
        self._futures = {}
        if executor is None:
            return
        if terminate:
            for process in list(self._processes.values()):
                if process.is_alive():
                    process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)


def _broken(future):
    return isinstance(future.exception(), concurrent.futures.process.BrokenProcessPool)


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
        self._keys = {}  # Dask key -> episode key

    def submit(self, task, key, attempt):
        # A deterministic key per attempt: the same attempt submitted twice runs once;
        # a retry after a lost worker is a new attempt with a new key.
        future = self.client.submit(run_task, task, key=_dask_key(task, attempt), pure=False, retries=0)
        self._keys[future.key] = key
        self._completed.add(future)
        return future

    def wait(self, futures):
        return {next(self._completed)}

    def outcomes(self, done):
        """(future, key, outcome) for each finished future."""
        from distributed import KilledWorker

        results = []
        for future in done:
            key = self._keys.pop(future.key)
            if future.status == "finished":
                results.append((future, key, ("row", future.result())))
                continue
            try:
                future.result()
            except (KilledWorker, concurrent.futures.CancelledError):
                results.append((future, key, ("lost", True)))
            except Exception as exc:  # noqa: BLE001 (run_task returns failures as rows: this is Dask's own error)
                results.append((future, key, ("error", f"dask: {type(exc).__name__}: {exc}")))
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
        retry = []
        for future, key, (kind, value) in runner.outcomes(runner.wait(in_flight)):
            in_flight.pop(future, None)
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
