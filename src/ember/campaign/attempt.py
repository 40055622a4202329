"""``run_task(task) -> row``: one attempt at one (policy, episode), the function every worker runs.

It never raises for a failing source: that is a ``failed`` row with a
one-line reason (campaign.md §3).  Built-in and submitted episodes run
right here (EMBER's own code); agent and python episodes run in an episode
process watched from here (``watch.py``).  A ``ResultsIOError`` (the
results directory cannot be written) is raised, not made a row: it is
EMBER's failure, and the run stops.  Rows are made by ``ember.results.rows``;
``run_task_line`` is what a worker sends: the row's checked line.
"""

import time

# Loaded with a worker's first attempt, for the episodes after it: with numpy loaded, the exposure field
# of a small floor is numpy's minima (metrics.exposure.small_field), about 2 ms an office episode less
# than the lowered field, for one import of about 0.1 s; the metrics are the same integers either way.
import numpy  # noqa: F401

from ..errors import EmberError, ResultsIOError
from ..results.rows import failed_row, ok_row, row_line
from ..scenario import compile_scenario
from .bounds import BoundsTask
from .episode import EpisodeFailure, KeptRecord, measure_submitted, run_builtin


class CompiledScenarios:
    """The last scenario a worker compiled, by its content hash: a worker's tasks come in scenario order
    (``plan.Plan.tasks``), so each of a run's scenarios is compiled once, not once an episode.

    A compiled scenario is read-only to what measures it (the simulator copies what it changes), and
    what it computes when first asked (its hash, the static exit distances) is the same for every
    episode; one entry keeps a worker's memory at one scenario.
    """

    def __init__(self):
        self.hash = self.compiled = None

    def get(self, task):
        if task.scenario_hash != self.hash:
            self.compiled = compile_scenario(task.scenario)
            self.hash = task.scenario_hash
        return self.compiled


_compiled = CompiledScenarios()


def _attempt(task, host):
    entry = task.policy
    if "records" in entry:
        scenario = _compiled.get(task)
        return measure_submitted(entry, scenario, task.seed, task.folder)
    if "builtin" in entry:
        scenario = _compiled.get(task)
        kept = None
        if task.keep_records:
            kept = KeptRecord(task.results, entry["name"], scenario.scenario_id, task.seed)
        metrics, sha = run_builtin(entry, scenario, task.seed, kept)
        return metrics, (kept.relative if kept is not None else None), sha
    from .watch import watch_episode  # agents and python policies only: a built-in's worker never loads it

    return watch_episode(task, host)


def run_task(task, host=None):
    """One attempt at one episode (a ``Task``) -> its row (campaign.md §4).

    ``host``: what the calling worker offers the episode watcher (``watch.WatcherHost``).
    A ``BoundsTask`` (``evaluate --bounds``) gives its line of bounds.jsonl instead.
    """
    if isinstance(task, BoundsTask):
        return task.run()
    started = time.perf_counter()
    try:
        metrics, record, sha = _attempt(task, host)
    except EpisodeFailure as exc:
        return failed_row(**task.row_fields(), error=exc, elapsed_s=time.perf_counter() - started)
    except ResultsIOError:
        raise
    except EmberError as exc:  # the simulator or engine refused what EMBER itself produced: still one row
        error = f"{type(exc).__name__}: {exc}"
        return failed_row(**task.row_fields(), error=error, elapsed_s=time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    return ok_row(**task.row_fields(), metrics=metrics, record=record, record_sha256=sha, elapsed_s=elapsed)


def run_task_line(task, host=None):
    """``run_task`` as a worker sends it: the row's checked line (``rows.RowLine``), which the command writes as
    it is (a ``BoundsTask``'s line as ``run_task`` gives it)."""
    outcome = run_task(task, host)
    if isinstance(task, BoundsTask):
        return outcome
    return row_line(outcome, task.results)
