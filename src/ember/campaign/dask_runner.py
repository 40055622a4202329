"""``DaskRunner``: episodes on an existing Dask distributed cluster (``--scheduler ADDRESS``, the 'dask' extra).

A ``runner.Runner``: episodes travel in batches (one pickled payload per
Dask task), each episode the same ``run_task_line`` as in a local worker, so
its row never depends on the batching.  A row comes back as the worker made
and checked it (a ``RowLine``: its bytes and a few scalars), which the
command writes as it is: it neither decodes nor re-encodes a row.  ``distributed`` is imported only when
a ``DaskRunner`` is made.
"""

import concurrent.futures
import hashlib
import pickle

from ..errors import ResultsError, ResultsIOError, SandboxError
from ..results.rows import RowLine
from .runner import Runner

#: How long closing the Dask client may take.
DASK_CLOSE_S = 10

#: Episodes per Dask task until the first rows say how long an episode
#: takes.  A task costs milliseconds to tens of milliseconds of scheduling
#: and transfer (the scheduler's round trip and the pickled task, paid per
#: task, not per worker start), as much as a short episode; a batch pays it
#: once.
DASK_BATCH = 8
#: Then a batch is sized to take about this long (mean episode time of the
#: rows so far), between 1 and ``DASK_BATCH_MAX`` episodes: short episodes
#: share a task's cost widely, long ones go one by one, so the last batches
#: of a campaign still spread over the workers.  A task's own cost (the
#: scheduler's and the command's, 5-15 ms on a loaded machine) is then
#: about 1% of its work: on office episodes (about 20 ms) a quarter of a
#: second of work a task still left the scheduler and the command about
#: 1.7 ms of CPU an episode, most of it per task.
DASK_TASK_S = 1.0
DASK_BATCH_MAX = 256


def batch_size(episodes, seconds):
    """Episodes per Dask task after ``episodes`` rows that took ``seconds`` in all: about ``DASK_TASK_S``
    of work, between 1 and ``DASK_BATCH_MAX``; ``DASK_BATCH`` before any row."""
    if not episodes:
        return DASK_BATCH
    if seconds <= 0:  # every episode under the rows' millisecond
        return DASK_BATCH_MAX
    return max(1, min(DASK_BATCH_MAX, round(DASK_TASK_S * episodes / seconds)))


def run_batch(payload):
    """Several episodes in one Dask task -> one outcome per task, in order: ``(kind, value)``.

    ``payload`` is the pickled list of the batch's tasks: bytes, which Dask
    passes on as they are, where a list of tasks would be walked, every
    scenario's grid included, in the command's ``Client.submit`` looking for
    Dask keys (a tenth of the command's time on short episodes).  Each
    episode is the same ``run_task_line`` as alone, so its row never depends
    on the batching.  After a ``ResultsIOError`` (or a row the results layer
    refuses, a ``ResultsError``) the rest are not run (their
    outcome is ``("lost", False)``: nothing charged); the driver stops anyway.
    """
    from .attempt import run_task_line  # on the Dask worker: the command never runs an episode itself

    tasks = pickle.loads(payload)  # noqa: S301 (made by this campaign's own command, just above)
    outcomes = []
    for task in tasks:
        if outcomes and outcomes[-1][0] == "fatal":
            outcomes.append(("lost", False))
            continue
        try:
            outcomes.append(("row", run_task_line(task)))
        except (ResultsIOError, ResultsError) as exc:
            outcomes.append(("fatal", exc))
        except Exception as exc:  # noqa: BLE001 (run_task returns failures as rows: this is the engine's own error)
            outcomes.append(("error", f"dask: {type(exc).__name__}: {exc}"))
    return outcomes


def _batch_key(payload, members):
    """One key per (batch, attempts): the batch's pickled tasks and its members' attempt numbers, hashed.

    One hash over bytes already made, instead of a canonical encoding of every episode's identity.
    """
    digest = hashlib.sha256(payload)
    digest.update(",".join(str(m.attempt) for m in members).encode())
    return f"ember-batch-{digest.hexdigest()[:32]}"


class _Episode:
    """One episode's attempt inside a Dask batch: what ``run_tasks`` holds as its future."""

    __slots__ = ("task", "attempt", "batch", "index")

    def __init__(self, task, attempt):
        self.task, self.attempt, self.batch, self.index = task, attempt, None, None


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


class DaskRunner(Runner):
    """Episodes on an existing Dask distributed cluster (``--scheduler ADDRESS``).

    ``submit`` only queues an episode; ``wait`` sends the queue as batches
    (``batch``: ``DASK_BATCH`` episodes, then sized from the episodes'
    times; the window is two batches a worker, so every worker has its next
    batch while it runs one).  A batch whose worker is lost charges each of
    its episodes one attempt.
    """

    def __init__(self, address, batch=None):
        from distributed import as_completed  # the 'dask' extra, imported only here

        self.client = _closing_client_class()(address, set_as_default=False)
        try:
            self.workers = len(self.client.scheduler_info().get("workers", {})) or 1
            self.fixed_batch = batch  # None: sized from the episodes' times (DASK_TASK_S)
            self._episode_s = 0.0  # the elapsed_s of the rows so far, and how many
            self._episodes = 0
            # Results come with the futures, gathered in the background: no round trip per batch.
            self._completed = as_completed(loop=self.client.loop, with_results=True, raise_errors=False)
        except BaseException:
            self.close()
            raise
        self._queued = []  # _Episode not yet sent
        self._members = {}  # batch future -> its _Episode list
        self._results = {}  # batch future -> what as_completed gathered for it

    def check_sandbox(self, files):
        """Ask every worker whether it can make a ``required`` sandbox for ``files`` (isolation.md §2, Dask);
        ``SandboxError`` naming the first that cannot and what it lacks."""
        from ..isolation.probe import OFF_HINT, sandbox_problem

        problems = self.client.run(sandbox_problem, list(files))
        for address, problem in sorted(problems.items()):
            if problem is not None:
                raise SandboxError(f"the sandbox cannot run on the Dask worker {address}: {problem}; {OFF_HINT}.")

    @property
    def batch(self):
        """Episodes per task: fixed if given, else about ``DASK_TASK_S`` of the mean episode so far."""
        if self.fixed_batch is not None:
            return self.fixed_batch
        return batch_size(self._episodes, self._episode_s)

    @property
    def window(self):
        """Episodes in flight: two batches a worker, so every worker has its next batch while it runs one."""
        return max(2, 2 * self.workers) * self.batch

    def submit(self, task, key, attempt):
        episode = _Episode(task, attempt)
        self._queued.append(episode)
        return episode

    def _send(self):
        queued, self._queued = self._queued, []
        if not queued:
            return
        # Full batches: what is queued is what finished batches freed (a smaller batch only at the tail).
        batch = self.batch
        for start in range(0, len(queued), batch):
            members = queued[start : start + batch]
            # A deterministic key per (batch, attempts): the same batch submitted twice runs once;
            # a retry after a lost worker is a new attempt, so a new key.
            payload = pickle.dumps([m.task for m in members], protocol=pickle.HIGHEST_PROTOCOL)
            future = self.client.submit(run_batch, payload, key=_batch_key(payload, members), pure=False, retries=0)
            for index, member in enumerate(members):
                member.batch, member.index = future, index
            self._members[future] = members
            self._completed.add(future)

    def wait(self, futures):
        self._send()
        finished = [next(self._completed)]
        finished.extend(self._completed.next_batch(block=False))  # whatever else is done already
        for future, result in finished:
            self._results[future] = result
        return [member for future, _ in finished for member in self._members.get(future, ())]

    def outcomes(self, done):
        """(episode, kind, value) for each episode of the finished batches."""
        from distributed import KilledWorker

        results = []
        batches = {}
        for episode in done:
            batches.setdefault(episode.batch, []).append(episode)
        for future, members in batches.items():
            self._members.pop(future, None)
            result = self._results.pop(future, None)
            if future.status == "finished":
                results.extend(self._finished(members, result))
                future.release()
                continue
            try:
                # Not finished when looked at, yet it may finish while this waits (a task rescheduled
                # after its worker was lost): its outcomes are then the batch's, as above.
                outcomes = future.result()
            except (KilledWorker, concurrent.futures.CancelledError):
                outcome = ("lost", True)  # each episode of the batch is charged one attempt
            except (ResultsIOError, ResultsError) as exc:
                outcome = ("fatal", exc)
            except Exception as exc:  # noqa: BLE001 (run_batch returns failures as outcomes: this is Dask's own error)
                outcome = ("error", f"dask: {type(exc).__name__}: {exc}")
            else:
                results.extend(self._finished(members, outcomes))
                future.release()
                continue
            results.extend((m, *outcome) for m in members)
            future.release()
        return results

    def _finished(self, members, outcomes):
        """(episode, kind, value) of a finished batch's members; its episodes' times sized the next batches."""
        for kind, row in outcomes:
            # A BoundsTask's outcome is its line (bytes), not an episode's row: no time to count.
            if kind == "row" and isinstance(row, RowLine):
                self._episode_s += row.elapsed_s
                self._episodes += 1
        return [(m, *outcomes[m.index]) for m in members]

    def close(self, terminate=False):
        client, self.client = self.client, None
        if client is not None:
            client.close(timeout=DASK_CLOSE_S)
