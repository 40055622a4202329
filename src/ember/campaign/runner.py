"""Runners: local worker processes or a Dask cluster, behind one ``Runner`` protocol and one driving loop.

``run_tasks`` submits episodes, takes them back as they complete and hands each
row to the writer once.  A runner only knows how to submit one attempt, wait
for the first to finish and say what became of it, as ``(future, kind,
value)``:

- ``"row"``: the attempt ran (its row may be ``failed``);
- ``"error"``: the engine itself failed the task (a failed row);
- ``"fatal"``: the results directory could not be written (a
  ``ResultsIOError``): the run stops, nothing is charged to the policy;
- ``"lost"``: its worker was lost; ``value`` says whether the attempt
  counts against ``1 + retries`` (an episode that had not started, or that
  ran beside the one that killed the pool, is not charged).

Local processes are ``local_runner.LocalRunner`` (a ``ProcessPoolExecutor``);
Dask is ``dask_runner.DaskRunner`` (a ``distributed.Client`` with its own
futures and ``as_completed``, as Dask users expect).  Both return the same
rows: the episode function is the same.
"""

import collections
import typing

from ..errors import CampaignError
from ..results.rows import failed_row
from .bounds import BoundsTask

WORKER_LOST = "worker lost"


class Runner(typing.Protocol):
    """What ``run_tasks`` needs of a runner (``LocalRunner``, ``DaskRunner``, a test's scripted one).

    ``window``: how many attempts may be in flight.  ``submit(task, key,
    attempt)`` starts the ``attempt``-th attempt at ``task`` (a ``Task``; its
    episode ``key``) and returns a future, any hashable token;
    ``wait(futures)`` blocks until at least one is done and returns the done
    ones; ``outcomes(done)`` says what became of each, as ``(future, kind,
    value)`` (the module docstring); ``close(terminate=False)`` stops the
    workers, at once with ``terminate``; ``check_sandbox(files)`` raises
    ``SandboxError`` when a worker cannot make a ``required`` sandbox.
    """

    window: int

    def submit(self, task, key, attempt): ...

    def wait(self, futures): ...

    def outcomes(self, done): ...

    def close(self, terminate=False): ...

    def check_sandbox(self, files): ...


def _failed(task, error):
    if isinstance(task, BoundsTask):  # no row to charge: EMBER's own computation failed, and the run stops
        raise CampaignError(f"{task.describe()} could not be computed: {error}")
    return failed_row(**task.row_fields(), error=error, elapsed_s=0.0)


# -- the loop -----------------------------------------------------------------------


class _Attempt:
    """One submitted attempt: its episode key, task, number and how many earlier attempts were charged."""

    __slots__ = ("key", "task", "number", "charged")

    def __init__(self, key, task, number, charged):
        self.key, self.task, self.number, self.charged = key, task, number, charged


def run_tasks(runner, tasks, retries, on_row):
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
                on_row(_failed(attempt.task, value))
            else:
                lost_attempts += 1
                attempt.charged += bool(value)
                if attempt.charged >= 1 + retries:
                    on_row(_failed(attempt.task, WORKER_LOST))
                else:
                    lost.append(attempt)
        if fatal is not None:
            raise fatal  # after the rows that came with it: a finished episode is never dropped
        retry.extendleft(reversed(lost))
