"""``evaluate``: a campaign file and a results directory in, rows out (campaign.md §3).

The ranking is not computed here (Campaign does not import Ranking): the
caller ranks the finished directory.
"""

import contextlib
import os
import signal
import sys
import threading

from ..errors import CampaignError, EmberError
from ..versions import METRICS_VERSION, OBSERVATION_VERSION, RANKING_VERSION, SIMULATOR_VERSION
from .runner import DaskRunner, LocalRunner, drive
from .spec import load_campaign
from .store import ResultsDir, merge_campaign

DEFAULT_RETRIES = 2


class Terminated(BaseException):
    """SIGTERM arrived: stop like Ctrl-C, with exit status 143."""


def package_version():
    from importlib import metadata

    try:
        return metadata.version("ember-eval")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def versions():
    return {
        "simulator": SIMULATOR_VERSION,
        "observation": OBSERVATION_VERSION,
        "metrics": METRICS_VERSION,
        "ranking": RANKING_VERSION,
        "package": package_version(),
    }


def resolve(campaign):
    """The campaign.json dict of a loaded ``Campaign``."""
    return {
        "campaign": campaign.name,
        "versions": versions(),
        "scenarios": [entry.resolved() for entry in campaign.scenarios],
        "policies": [dict(p) for p in campaign.policies],
    }


class Summary:
    """What a run did: rows written this run and the state of every episode of K at the end."""

    def __init__(self, episodes, ran):
        self.episodes = episodes  # |K| x |P|
        self.ran = ran
        self.ok = 0
        self.failed = 0
        self.missing = episodes
        self.this_run_ok = 0
        self.this_run_failed = 0

    def line(self):
        return (
            f"{self.episodes} episodes: {self.ok} ok, {self.failed} failed"
            + (f", {self.missing} without a row" if self.missing else "")
            + f" (this run: {self.this_run_ok} ok, {self.this_run_failed} failed of {self.ran})."
        )


class _Progress:
    """A tqdm bar over episodes on a terminal; nothing otherwise (or without tqdm)."""

    def __init__(self, total, stream):
        self.bar = None
        self.failed = 0
        if total and _is_terminal(stream):
            try:
                from tqdm import tqdm  # the 'cli' extra
            except ImportError:
                return
            self.bar = tqdm(total=total, file=stream, unit="episode", desc="ember evaluate", dynamic_ncols=True)

    def update(self, row):
        if self.bar is None:
            return
        self.failed += row["status"] == "failed"
        self.bar.set_postfix(failed=self.failed, refresh=False)
        self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _sigterm_raises():
    """SIGTERM raises ``Terminated`` in the main thread, so a run ends as after Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def plan(campaign, resolved, counting, retry_failed, results, keep_records):
    """The tasks of this run, key -> task, in scenario, seed, policy order.

    ``counting`` maps (policy, scenario_hash, seed) to the status of its counting row.
    """
    by_id = {entry.scenario_id: entry for entry in campaign.scenarios}
    policies = {p["name"]: p for p in resolved["policies"]}
    tasks = {}
    for sc in resolved["scenarios"]:
        entry = by_id[sc["scenario_id"]]
        for seed in sc["seeds"]:
            for name, policy in policies.items():
                key = (name, sc["scenario_hash"], seed)
                last = counting.get(key)
                if last is not None and (last == "ok" or not retry_failed):
                    continue
                tasks[key] = {
                    "campaign": resolved["campaign"],
                    "policy": policy,
                    "scenario": entry.data,
                    "scenario_id": sc["scenario_id"],
                    "scenario_hash": sc["scenario_hash"],
                    "seed": seed,
                    "folder": campaign.folder,
                    "results": results,
                    "keep_records": keep_records,
                }
    return tasks


def evaluate(
    campaign_path,
    results_dir,
    *,
    workers=None,
    scheduler=None,
    retries=DEFAULT_RETRIES,
    retry_failed=False,
    keep_records=False,
    stream=None,
    warn=None,
):
    """Run a campaign into ``results_dir``; return a ``Summary``.

    Raises ``CampaignError`` for bad input before anything is written;
    ``KeyboardInterrupt`` / ``Terminated`` after an interruption (every row
    reported finished is on disk).  ``warn(text)`` receives warnings
    (default: Python's ``warnings.warn``; nothing here prints).  ``stream``
    is where a progress bar may draw when it is a terminal (default: the
    current ``sys.stderr``).
    """
    stream = sys.stderr if stream is None else stream
    warn = warn or _python_warning
    if workers is not None and workers < 1:
        raise CampaignError(f"--workers: expected an integer >= 1, got {workers}.")
    if retries < 0:
        raise CampaignError(f"--retries: expected an integer >= 0, got {retries}.")
    campaign = load_campaign(campaign_path)
    resolved = resolve(campaign)
    with ResultsDir(results_dir) as store:
        store.lock()
        existing = store.existing()  # the whole directory checked, before anything runs or is written
        torn = b""
        counting = {}  # (policy, scenario_hash, seed) -> "ok" | "failed", of the counting row
        if existing is not None:
            torn = existing.torn
            resolved = merge_campaign(existing.campaign.value, resolved, store.file("campaign.json"))
            for (policy, (scenario_hash, seed)), row in existing.counting.items():
                counting[policy, scenario_hash, seed] = "ok" if row.ok else "failed"
        try:
            store.prepare(resolved)
        except EmberError:
            store.discard_if_created()
            raise
        tasks = plan(campaign, resolved, counting, retry_failed, store.path, keep_records)
        runner = None
        if tasks:
            # Connect before writing: an unreachable scheduler is bad input, and nothing is written.
            try:
                runner = _runner(workers, scheduler)
            except CampaignError:
                store.discard_if_created()
                raise
        try:
            if torn:
                warn(
                    f"{store.file('episodes.jsonl')}: a torn last line ({len(torn)} bytes) "
                    "was moved to episodes.jsonl.torn."
                )
            store.start(torn, [(entry.scenario_id, entry.data) for entry in campaign.scenarios])
            summary = Summary(
                sum(len(sc["seeds"]) for sc in resolved["scenarios"]) * len(resolved["policies"]), len(tasks)
            )
            progress = _Progress(len(tasks), stream)

            def on_row(row):
                row = store.append(row)
                counting[(row["policy"], row["scenario_hash"], row["seed"])] = row["status"]
                if row["status"] == "ok":
                    summary.this_run_ok += 1
                else:
                    summary.this_run_failed += 1
                progress.update(row)

            try:
                with _sigterm_raises():
                    if tasks:
                        drive(runner, tasks, retries, on_row)
            except BaseException:
                if runner is not None:
                    runner.close(terminate=True)
                    runner = None
                raise
            finally:
                progress.close()
        finally:
            if runner is not None:
                runner.close()
    statuses = list(counting.values())
    summary.ok = statuses.count("ok")
    summary.failed = statuses.count("failed")
    summary.missing = summary.episodes - len(statuses)
    return summary


def _python_warning(text):
    import warnings

    warnings.warn(text, RuntimeWarning, stacklevel=3)


def _runner(workers, scheduler):
    if scheduler is not None:
        try:
            import distributed  # noqa: F401  (the 'dask' extra)
        except ImportError:
            raise CampaignError("--scheduler needs Dask distributed: pip install 'ember-eval[dask]'.") from None
        try:
            return DaskRunner(scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            raise CampaignError(
                f"--scheduler {scheduler}: cannot connect to the Dask scheduler: {' '.join(str(exc).split())}"
            ) from None
    return LocalRunner(workers or os.cpu_count() or 1)
