"""``evaluate``: a campaign file and a results directory in, rows out (campaign.md §3).

The ranking is not computed here (Campaign does not import Ranking): the
caller ranks the finished directory.
"""

import contextlib
import os
import signal
import sys
import threading

from ..errors import CampaignError, EmberError, ResultsIOError
from ..versions import METRICS_VERSION, OBSERVATION_VERSION, RANKING_VERSION, SIMULATOR_VERSION
from .plan import Plan, Tally
from .runner import DaskRunner, drive
from .spec import check_size, load_campaign
from .store import ResultsDir, merge_campaign
from .workers import LocalRunner

DEFAULT_RETRIES = 2
STOPPED = (
    "the run stopped (every row written is whole; the episodes without a row run when 'ember evaluate' is run again)"
)


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
    """The campaign.json dict of a loaded ``ResolvedCampaign``."""
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
        statuses = None  # the counting rows' statuses (a StatusTable) of a resumed directory
        if existing is not None:
            torn = existing.torn
            resolved = merge_campaign(existing.campaign.value, resolved, store.file("campaign.json"))
            check_size(
                sum(len(sc["seeds"]) for sc in resolved["scenarios"]),
                len(resolved["policies"]),
                f"{campaign.path} with {store.file('campaign.json')}",
            )
            statuses = existing.statuses
            del existing  # its parsed campaign.json: what is kept of it is in ``statuses`` and ``resolved``
        try:
            store.prepare(resolved)
        except EmberError:
            store.discard_if_created()
            raise

        def last_status(key):
            return None if statuses is None else statuses.get(key[0], (key[1], key[2]))

        plan = Plan(campaign, resolved, last_status, retry_failed, store.path, keep_records)
        ran = plan.count()
        runner = None
        if ran:
            # Connect before writing: an unreachable scheduler is bad input, and nothing is written.
            try:
                runner = _runner(workers, scheduler)
            except CampaignError:
                store.discard_if_created()
                raise
        tally = Tally(
            sum(len(sc["seeds"]) for sc in resolved["scenarios"]) * len(resolved["policies"]),
            statuses.ok if statuses is not None else 0,
            statuses.failed if statuses is not None else 0,
            last_status,
        )
        summary = Summary(tally.episodes, ran)
        lost = 0
        try:
            if torn:
                warn(
                    f"{store.file('episodes.jsonl')}: a torn last line ({len(torn)} bytes) "
                    "was moved to episodes.jsonl.torn."
                )
            store.start(torn, [(entry.scenario_id, entry.data) for entry in campaign.scenarios])
            store.remove_temporary_files()  # what a killed run left (its workers had no time to)
            progress = _Progress(ran, stream)

            def on_row(row):
                row = store.append(row)
                tally.add(row)
                if row["status"] == "ok":
                    summary.this_run_ok += 1
                else:
                    summary.this_run_failed += 1
                progress.update(row)

            try:
                with _sigterm_raises():
                    if ran:
                        lost = drive(runner, plan.tasks(), retries, on_row)
            except BaseException as exc:
                if runner is not None:
                    runner.close(terminate=True)
                    runner = None
                store.remove_temporary_files()
                if isinstance(exc, ResultsIOError):
                    raise ResultsIOError(exc.errno, exc.strerror, exc.filename, note=STOPPED) from None
                raise
            finally:
                progress.close()
        finally:
            if runner is not None:
                runner.close()
                if lost:
                    store.remove_temporary_files()  # a worker lost mid-episode left its temporary files
    summary.ok, summary.failed, summary.missing = tally.ok, tally.failed, tally.missing
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
