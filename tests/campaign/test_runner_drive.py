"""The campaign driving loop (campaign/runner.py ``drive``) with a scripted runner, in this process.

The real-process tests (test_campaign.py, test_faults.py) show that the
runners report what happens to real workers; these show what ``drive``
makes of every report: one row per key, lost attempts retried until
charged ``1 + retries`` times, uncharged losses free, a window never
exceeded, tasks taken lazily, a fatal error raised after the rows that came
with it.  Each scenario is compared with a plain model of the rules.
"""

import itertools

import pytest

from ember.campaign.runner import WORKER_LOST
from ember.campaign.runner import run_tasks as drive
from ember.campaign.task import Task
from ember.errors import ResultsIOError


def task(key):
    policy, scenario_hash, seed = key
    return Task(
        campaign="drive",
        policy={"name": policy},
        where="policies[0]",
        scenario={},
        scenario_id="s",
        scenario_hash=scenario_hash,
        seed=seed,
        folder=".",
        results=".",
        keep_records=False,
    )


def row(key, status="ok"):
    return {"policy": key[0], "scenario_hash": key[1], "seed": key[2], "status": status, "error": None}


class ScriptedRunner:
    """A runner whose attempts end as ``script(key, attempt_number)`` says, a batch at a time.

    Outcomes: ("row", status), ("error", text), ("lost", charged), ("fatal", exc).
    ``batch`` attempts (at most) end at each ``wait``; it records the window's use.
    """

    def __init__(self, script, window=3, batch=2):
        self.script = script
        self.window = window
        self.batch = batch
        self.flying = {}  # future -> (key, attempt)
        self.futures = itertools.count()
        self.submitted = []
        self.most_in_flight = 0

    def submit(self, task, key, attempt):
        future = next(self.futures)
        self.flying[future] = (key, attempt)
        self.submitted.append((key, attempt))
        self.most_in_flight = max(self.most_in_flight, len(self.flying))
        return future

    def wait(self, futures):
        assert set(futures) == set(self.flying), "drive waits on exactly what is in flight"
        return sorted(futures)[: self.batch]

    def outcomes(self, done):
        results = []
        for future in done:
            key, attempt = self.flying.pop(future)
            kind, value = self.script(key, attempt)
            if kind == "row":
                value = row(key, value)
            results.append((future, kind, value))
        return results


def keys(n):
    return [("p", f"h{i % 3}", i) for i in range(n)]


def run(runner, n, retries=2):
    written = []
    lost = drive(runner, ((key, task(key)) for key in keys(n)), retries, written.append)
    return written, lost


def model(n, script, retries):
    """What the rules say each key ends with: its row, its number of attempts."""
    expected = {}
    for key in keys(n):
        charged, attempt = 0, 0
        while True:
            attempt += 1
            kind, value = script(key, attempt)
            if kind == "row":
                expected[key] = (value, attempt)
                break
            if kind == "error":
                expected[key] = ("failed", attempt)
                break
            charged += bool(value)
            if charged >= 1 + retries:
                expected[key] = ("lost", attempt)
                break
    return expected


SCRIPTS = {
    "all ok": lambda key, attempt: ("row", "ok"),
    "some fail": lambda key, attempt: ("row", "failed" if key[2] % 4 == 1 else "ok"),
    "engine errors": lambda key, attempt: ("error", "dask: boom\nline two") if key[2] % 5 == 2 else ("row", "ok"),
    "lost once, charged": lambda key, attempt: ("lost", True) if attempt == 1 and key[2] % 2 else ("row", "ok"),
    "lost free twice, then ok": lambda key, attempt: ("lost", False) if attempt <= 2 else ("row", "ok"),
    "always lost": lambda key, attempt: ("lost", True),
    "mixed losses": lambda key, attempt: (
        ("lost", attempt % 2 == 1) if attempt <= 4 and key[2] % 3 == 0 else ("row", "ok")
    ),
}


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("retries", [0, 2])
@pytest.mark.parametrize("window, batch", [(1, 1), (3, 2), (8, 8)])
def test_every_key_gets_its_one_row_as_the_rules_say(name, retries, window, batch):
    script = SCRIPTS[name]
    runner = ScriptedRunner(script, window=window, batch=batch)
    written, lost = run(runner, 17, retries)
    expected = model(17, script, retries)
    assert [r["seed"] for r in written] != [] and len(written) == len(expected) == 17
    by_key = {}
    for r in written:
        key = (r["policy"], r["scenario_hash"], r["seed"])
        assert key not in by_key, "one row per key"
        by_key[key] = r
    for key, (status, attempts) in expected.items():
        got = by_key[key]
        if status == "lost":
            assert got["status"] == "failed" and got["error"] == WORKER_LOST and got["metrics"] is None
            assert got["elapsed_s"] == 0.0
        elif status == "failed" and name == "engine errors":
            assert got["status"] == "failed" and got["error"] == "dask: boom line two"  # one line
        else:
            assert got["status"] == status
        assert sum(1 for k, _ in runner.submitted if k == key) == attempts
        # Attempt numbers count up by one per submission of the key.
        assert [a for k, a in runner.submitted if k == key] == list(range(1, attempts + 1))
    assert runner.most_in_flight <= window
    assert lost == sum(attempts - 1 for status, attempts in expected.values() if status != "lost") + sum(
        attempts for status, attempts in expected.values() if status == "lost"
    )


def test_tasks_are_taken_lazily_within_the_window():
    taken = []

    def tasks():
        for key in keys(1000):
            taken.append(key)
            yield key, task(key)

    runner = ScriptedRunner(lambda key, attempt: ("row", "ok"), window=4, batch=1)
    seen = []

    def on_row(r):
        # When the n-th row arrives, at most window more tasks than rows have been made.
        seen.append(len(taken))
        assert len(taken) <= len(seen) + runner.window

    drive(runner, tasks(), 2, on_row)
    assert len(seen) == 1000


def test_a_lost_attempt_is_retried_before_new_tasks():
    script = lambda key, attempt: ("lost", True) if key[2] == 0 and attempt == 1 else ("row", "ok")  # noqa: E731
    runner = ScriptedRunner(script, window=1, batch=1)
    run(runner, 3)
    assert [k[2] for k, _ in runner.submitted] == [0, 0, 1, 2]


def test_a_fatal_outcome_stops_after_the_rows_of_its_batch():
    error = ResultsIOError(28, "No space left on device", "/r/records/p/s/3.record.gz")

    def script(key, attempt):
        return ("fatal", error) if key[2] == 3 else ("row", "ok")

    runner = ScriptedRunner(script, window=4, batch=4)
    written = []
    with pytest.raises(ResultsIOError) as raised:
        drive(runner, ((key, task(key)) for key in keys(10)), 2, written.append)
    assert raised.value is error
    assert sorted(r["seed"] for r in written) == [0, 1, 2]  # its batch's other rows are kept, nothing after


def test_an_error_in_on_row_propagates_and_stops():
    runner = ScriptedRunner(lambda key, attempt: ("row", "ok"), window=2, batch=1)
    calls = []

    def on_row(r):
        calls.append(r)
        if len(calls) == 2:
            raise ResultsIOError(28, "No space left on device", "/r/episodes.jsonl")

    with pytest.raises(ResultsIOError):
        drive(runner, ((key, task(key)) for key in keys(10)), 2, on_row)
    assert len(calls) == 2


def test_a_report_for_a_future_not_in_flight_is_dropped():
    class Duplicating(ScriptedRunner):
        def outcomes(self, done):
            results = super().outcomes(done)
            return results + [(future, kind, value) for future, kind, value in results]  # each twice

    runner = Duplicating(lambda key, attempt: ("row", "ok"), window=3, batch=2)
    written, _ = run(runner, 9)
    assert sorted(r["seed"] for r in written) == list(range(9))
