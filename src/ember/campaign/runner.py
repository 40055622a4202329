"""Runners: local worker processes or a Dask cluster, behind one driving loop.

``drive`` submits episodes, takes them back as they complete and hands each
row to the store once.  A runner only knows how to submit one attempt, wait
for the first to finish and say what became of it, as ``(future, kind,
value)``:

- ``"row"``: the attempt ran (its row may be ``failed``);
- ``"error"``: the engine itself failed the task (a failed row);
- ``"fatal"``: the results directory could not be written (a
  ``ResultsIOError``): the run stops, nothing is charged to the policy;
- ``"lost"``: its worker was lost; ``value`` says whether the attempt
  counts against ``1 + retries`` (an episode that had not started, or that
  ran beside the one that killed the pool, is not charged).

Local processes are ``workers.LocalRunner`` (a ``ProcessPoolExecutor``);
Dask uses a ``distributed.Client`` with its own futures and
``as_completed``, as Dask users expect.  Both return the same rows: the
episode function is the same.
"""

import collections
import concurrent.futures
import hashlib

from ..canonical import canonical_json
from ..errors import ResultsIOError
from .attempt import run_task

WORKER_LOST = "worker lost"
#: How long closing the Dask client may take.
DASK_CLOSE_S = 10


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


# -- Dask ---------------------------------------------------------------------------


def _dask_key(task, attempt):
    digest = hashlib.sha256(
        canonical_json([task["campaign"], task["policy"], task["scenario_hash"], task["seed"], task["results"]])
    ).hexdigest()[:32]
    return f"ember-episode-{digest}-{attempt}"


def _closing_client_class():
    from distributed import Client  # the 'dask' extra, imported only here

    class ClosingClient(Client):
        """A ``Client`` that closes itself when it cannot start (a bad address, no scheduler).

        Left to the garbage collector, a half-started client hangs the
        interpreter's exit.
        """

        def start(self, **kwargs):
            try:
                return super().start(**kwargs)
            except BaseException:
                self.close(timeout=DASK_CLOSE_S)
                raise

    return ClosingClient


class DaskRunner:
    """Episodes on an existing Dask distributed cluster (``--scheduler ADDRESS``)."""

    def __init__(self, address):
        from distributed import as_completed  # the 'dask' extra, imported only here

        self.client = _closing_client_class()(address, set_as_default=False)
        try:
            workers = len(self.client.scheduler_info().get("workers", {})) or 1
            self.window = max(2, 2 * workers)
            self._completed = as_completed(loop=self.client.loop)
        except BaseException:
            self.close()
            raise
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
        """(future, kind, value) for each finished future."""
        from distributed import KilledWorker

        results = []
        for future in done:
            self._keys.pop(future.key, None)
            if future.status == "finished":
                results.append((future, "row", future.result()))
                future.release()
                continue
            try:
                future.result()
            except (KilledWorker, concurrent.futures.CancelledError):
                results.append((future, "lost", True))
            except ResultsIOError as exc:
                results.append((future, "fatal", exc))
            except Exception as exc:  # noqa: BLE001 (run_task returns failures as rows: this is Dask's own error)
                results.append((future, "error", f"dask: {type(exc).__name__}: {exc}"))
            future.release()
        return results

    def close(self, terminate=False):
        client, self.client = self.client, None
        if client is not None:
            client.close(timeout=DASK_CLOSE_S)


# -- the loop -----------------------------------------------------------------------


class _Attempt:
    """One submitted attempt: its episode key, task, number and how many earlier attempts were charged."""

    __slots__ = ("key", "task", "number", "charged")

    def __init__(self, key, task, number, charged):
        self.key, self.task, self.number, self.charged = key, task, number, charged


def drive(runner, tasks, retries, on_row):
    """Run every (key, task) of the iterable ``tasks`` to one row each; ``on_row(row)`` is called once per key.

    Returns how many attempts were lost (their workers died).

    Tasks are taken from ``tasks`` only as the runner's window has room, so
    the loop holds at most a window of them (plus lost ones waiting to be
    retried), however many the campaign has.  A lost attempt is tried again
    until it has been charged ``1 + retries`` times, then gets a failed row
    ``worker lost``.  A ``fatal`` outcome raises its ``ResultsIOError``:
    the rows already handed on stay, the episodes in flight get none.
    """
    source = iter(tasks)
    retry = collections.deque()
    in_flight = {}  # future -> _Attempt
    lost_attempts = 0
    while True:
        while len(in_flight) < runner.window:
            if retry:
                attempt = retry.popleft()
            else:
                item = next(source, None)
                if item is None:
                    break
                attempt = _Attempt(item[0], item[1], 0, 0)
            attempt.number += 1
            in_flight[runner.submit(attempt.task, attempt.key, attempt.number)] = attempt
        if not in_flight:
            return lost_attempts
        lost, fatal = [], None
        for future, kind, value in runner.outcomes(runner.wait(in_flight)):
            attempt = in_flight.pop(future, None)
            if attempt is None:
                continue  # not ours (or already taken): a runner never reports one twice
            if kind == "fatal":
                fatal = fatal or value
            elif kind == "row":
                on_row(value)
            elif kind == "error":
                on_row(dict(_lost_row(attempt.task), error=" ".join(value.split())))
            else:
                lost_attempts += 1
                attempt.charged += bool(value)
                if attempt.charged >= 1 + retries:
                    on_row(_lost_row(attempt.task))
                else:
                    lost.append(attempt)
        if fatal is not None:
            raise fatal  # after the rows that came with it: a finished episode is never dropped
        retry.extendleft(reversed(lost))
