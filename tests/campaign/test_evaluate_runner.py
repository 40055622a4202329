"""``evaluate`` on a runner its caller makes (``make_runner``), and what it still holds when it reads the rows back.

The runner here runs each attempt with ``run_task`` in this process (no
worker process), as a test or ``benchmarks/bench_campaign_memory.py`` may.
At the end evaluate reads the directory back (the summary and ranking.json
say what is on disk); by then the run's own structures must be gone, so
that two campaigns' worth of seed lists and counting tables never sit in
memory together (docs/campaigns.md, "Bounded memory").
"""

import gc
import weakref

import pytest

from ember.campaign import driver, evaluate
from ember.campaign.attempt import run_task
from ember.ranking import compute_ranking, ranking_bytes
from ember.results import writer
from ember.results.reader import read_campaign_value
from ember.results.rows import failed_row

from helpers.campaigns import BASIC, by_key, read_rows, write_campaign

SMALL_ONE = """
campaign = "retries"
seeds = [0, 1]
scenarios = ["builtin:small-room"]

[[policies]]
name = "g"
builtin = "greedy"
"""


class InProcessRunner:
    """Each attempt runs at once, here, when waited for; records how it was closed."""

    window = 2

    def __init__(self):
        self.tasks = {}
        self.submitted = 0
        self.closed = []

    def submit(self, task, key, attempt):
        self.submitted += 1
        self.tasks[self.submitted] = task
        return self.submitted

    def wait(self, futures):
        return list(futures)

    def outcomes(self, done):
        return [(future, "row", run_task(self.tasks.pop(future))) for future in done]

    def close(self, terminate=False):
        self.closed.append(terminate)

    def check_sandbox(self, files):
        pass


def test_evaluate_runs_on_the_runner_it_is_given(tmp_path):
    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    made, runner = [], InProcessRunner()

    def make_runner(workers, scheduler):
        made.append((workers, scheduler))
        return runner

    summary = evaluate(path, results, workers=3, make_runner=make_runner)
    assert made == [(3, None)] and runner.submitted == 6 and runner.closed == [False]
    assert summary.line() == "6 episodes: 6 ok, 0 failed (this run: 6 ok, 0 failed of 6)."
    rows = read_rows(results)
    assert len(by_key(rows)) == 6 and all(row["status"] == "ok" for row in rows)
    # ranking.json is the ranking of the rows on disk, recomputed whole from the two files.
    recomputed, _ = compute_ranking(read_campaign_value(str(results)), (results / "episodes.jsonl").read_bytes())
    assert summary.ranking == recomputed
    assert (results / "ranking.json").read_bytes() == ranking_bytes(recomputed)

    def nothing_to_run(workers, scheduler):
        raise AssertionError("a runner was made with no episode to run")

    again = evaluate(path, results, make_runner=nothing_to_run)
    assert again.line() == "6 episodes: 6 ok, 0 failed (this run: 0 ok, 0 failed of 0)."
    assert (results / "ranking.json").read_bytes() == ranking_bytes(recomputed)


@pytest.mark.parametrize("resume", [False, True], ids=["new", "resume"])
def test_the_run_is_let_go_before_the_rows_are_read_back(tmp_path, monkeypatch, resume):
    path = write_campaign(tmp_path / "c", BASIC.replace("seeds = [0, 1]", "seeds = [0, 1, 2]"))
    results = tmp_path / "res"
    if resume:  # the directory holds some rows: a resume reads them and keeps their counting table
        evaluate(write_campaign(tmp_path / "first", BASIC), results, make_runner=lambda w, s: InProcessRunner())
    run = []  # weak references to what the run makes: its campaign, plan, the writer's and a resume's tables

    def watching(function, *parts):
        def watched(*args, **kwargs):
            made = function(*args, **kwargs)
            for part in parts:
                run.append(weakref.ref(part(made)))
            return made

        return watched

    monkeypatch.setattr(driver, "load_campaign", watching(driver.load_campaign, lambda c: c))
    monkeypatch.setattr(driver, "Plan", watching(driver.Plan, lambda p: p))
    monkeypatch.setattr(writer, "check_campaign", watching(writer.check_campaign, lambda c: c))
    monkeypatch.setattr(
        writer, "read_results", watching(writer.read_results, lambda r: r.campaign, lambda r: r.statuses)
    )
    alive = []

    def read_back(*args, **kwargs):
        gc.collect()
        alive.extend(type(ref()).__name__ for ref in run if ref() is not None)
        return read_results(*args, **kwargs)

    read_results = driver.read_results
    monkeypatch.setattr(driver, "read_results", read_back)
    summary = evaluate(path, results, make_runner=lambda workers, scheduler: InProcessRunner())
    ran = 2 if resume else 8  # small-room's seeds 0-2 and tiny's 4, under two policies; 6 of them first
    assert summary.line() == f"8 episodes: 8 ok, 0 failed (this run: {ran} ok, 0 failed of {ran})."
    assert len(run) == (5 if resume else 3) and alive == []


class ScriptedFailures(InProcessRunner):
    """Every attempt a failed row whose reason names its run and seed, except the seeds in ``ok``."""

    def __init__(self, run, ok=()):
        super().__init__()
        self.run, self.ok = run, set(ok)

    def outcomes(self, done):
        results = []
        for future in done:
            task = self.tasks.pop(future)
            if task.seed in self.ok:
                results.append((future, "row", run_task(task)))
            else:
                results.append((future, "row", failed_row(**task.row_fields(), error=f"{self.run} {task.seed}")))
        return results


def test_the_first_failed_reason_is_of_the_first_failed_counting_row_after_retries(tmp_path):
    # Rows: seed 0 failed, seed 1 failed (run a); with --retry-failed seed 0 ok, seed 1 failed (run b).
    path = write_campaign(tmp_path / "c", SMALL_ONE)
    results = tmp_path / "res"
    first = evaluate(path, results, make_runner=lambda w, s: ScriptedFailures("a"))
    assert [reason for _, _, reason, _ in first.failures] == ["a 0"]
    again = evaluate(path, results, retry_failed=True, make_runner=lambda w, s: ScriptedFailures("b", ok={0}))
    assert [row["error"] for row in read_rows(results)] == ["a 0", "a 1", None, "b 1"]
    assert [(policy, count, reason) for policy, count, reason, _ in again.failures] == [("g", 1, "b 1")]
