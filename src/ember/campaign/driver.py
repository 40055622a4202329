"""``evaluate``: a campaign file and a results directory in, rows and ranking.json out (campaign.md §3).

The directory is written through ``ember.results.writer``; at the end the
rows on disk are read back once: the summary is counted from them and
``ranking.write_ranking`` writes ranking.json from them.
"""

import contextlib
import itertools
import json
import os
import signal
import threading

from ..canonical import one_line
from ..errors import CampaignError, EmberError, ResultsIOError, SandboxError
from ..files import write_file
from ..isolation.boundary import OFF_WARNING
from ..isolation.probe import require_sandbox
from ..ranking import write_ranking
from ..results import CAMPAIGN_FILE, EPISODES_FILE, TORN_FILE, OkRows, read_results
from ..results.code_lists import read_code_list
from ..results.layout import BOUNDS_FILE, log_file
from ..results.rows import RowLine
from ..results.writer import ResultsWriter
from ..versions import METRICS_VERSION, OBSERVATION_VERSION, RANKING_VERSION, SIMULATOR_VERSION, package_version
from .bounds import BoundsTask, kept_lines, line_key
from .campaign_file import check_python_policies, check_size, foreign_policies, load_campaign
from .launchers import policy_files
from .local_runner import LocalRunner
from .plan import Plan
from .resume import merge_campaign
from .runner import run_tasks
from .seeds import compact_seeds

DEFAULT_RETRIES = 2
STOPPED = (
    "the run stopped (every row written is whole; the episodes without a row run when 'ember evaluate' is run again)"
)


class Terminated(BaseException):
    """SIGTERM arrived: stop like Ctrl-C, with exit status 143."""


def versions():
    return {
        "simulator": SIMULATOR_VERSION,
        "observation": OBSERVATION_VERSION,
        "metrics": METRICS_VERSION,
        "ranking": RANKING_VERSION,
        "package": package_version(),
    }


def resolve(campaign):
    """The campaign.json dict of a loaded ``ResolvedCampaign``, its seeds compact (``seeds.compact_seeds``).

    The entries' own seed lists are replaced by the compact seeds too: a
    run never holds a Python int per seed for the campaign file.
    """
    scenarios = []
    for entry in campaign.scenarios:
        entry.seeds = compact_seeds(entry.seeds)
        # ScenarioEntry.resolved()'s fields, without its list of the seeds.
        fields = ("scenario_id", "scenario_hash", "source", "seeds")
        scenarios.append({field: getattr(entry, field) for field in fields})
    return {
        "campaign": campaign.name,
        "versions": versions(),
        "scenarios": scenarios,
        "policies": [dict(p) for p in campaign.policies],
    }


class Summary:
    """What a run did: rows written this run, and the state of every episode of K at the end.

    ``ok``, ``failed`` and ``missing`` are counted from the rows on disk at
    the end (what ``rank`` and ``export`` will read), ``ranking`` is the
    ranking.json written from them and ``warnings`` what the reader said
    about the files (relative to the results directory).
    """

    def __init__(self, episodes, ran):
        self.episodes = episodes  # |K| x |P|
        self.ran = ran
        self.ok = 0
        self.failed = 0
        self.missing = episodes
        self.this_run_ok = 0
        self.this_run_failed = 0
        self.ranking = None
        self.warnings = []
        #: Per policy with failed counting rows, in the campaign's order: (policy, count, first reason, log).
        #: ``log`` is the path relative to the results directory of the first one's stderr log, or of the
        #: policy's logs folder, when there is one (else None).
        self.failures = []

    def count(self, results):
        """ok, failed and missing from ``results`` (the directory read back at the end)."""
        keys = results.campaign.keys
        self.episodes = len(keys) * len(results.campaign.policies)
        self.ok = results.statuses.ok
        self.failed = results.statuses.failed
        self.missing = self.episodes - self.ok - self.failed

    def explain(self, results, failed_rows):
        """``failures`` from the directory read back at the end and its ``FailedRows``."""
        self.failures = []
        for policy in results.campaign.policies:
            count = results.statuses.tally(policy)[1]
            first = failed_rows.first(policy)
            if not count or first is None:
                continue
            scenario_id, seed, reason = first
            log = log_file(policy, scenario_id, seed, "stderr")
            if not os.path.isfile(os.path.join(results.directory, log)):
                log = os.path.dirname(os.path.dirname(log))
                if not os.path.isdir(os.path.join(results.directory, log)):
                    log = None
            self.failures.append((policy, count, reason, log))

    def line(self):
        return (
            f"{self.episodes} episodes: {self.ok} ok, {self.failed} failed"
            + (f", {self.missing} without a row" if self.missing else "")
            + f" (this run: {self.this_run_ok} ok, {self.this_run_failed} failed of {self.ran})."
        )


class FailedRows:
    """Each policy's first failed counting row in file order (scenario ID, seed, error), found in the counting
    table of the directory read back: nothing is kept per failed row while reading (a policy that fails 10^6
    episodes would hold 10^6 reasons), and the one row is read again for its reason."""

    def __init__(self, results):
        self.results = results

    def first(self, policy):
        """(scenario_id, seed, error) of ``policy``'s first failed counting row in file order, or None."""
        statuses, first = self.results.statuses, None
        for key in self.results.campaign.keys:
            if statuses.get(policy, key) == "failed":
                line = statuses.line(policy, key)
                if first is None or line < first[0]:
                    first = (line, key)
        if first is None:
            return None
        row = next(self.results.counting_rows([(policy, first[1])]))
        return row.scenario_id, first[1][1], row.value["error"]


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
    progress=None,
    warn=None,
    sandbox=None,
    make_runner=None,
    adopt_code=False,
    say=None,
    bounds=False,
    rows=None,
):
    """Run a campaign into ``results_dir``, write its ranking.json; return a ``Summary``.

    ``bounds``: also write bounds.jsonl (bounds.md §5), the keys without a line computed as tasks on the
    same runner as the episodes.

    Raises ``CampaignError`` for bad input before anything is written;
    ``KeyboardInterrupt`` / ``Terminated`` after an interruption (every row
    reported finished is on disk; no ranking.json).  ``warn(text)`` receives
    warnings (default: Python's ``warnings.warn``; nothing here prints).
    ``progress(done, failed, total)`` is called after each row written
    this run (the CLI draws a bar with it: ``progress.episodes_progress``).
    ``sandbox``: ``required`` (the default) or ``off``, how the processes of
    agent and python policies start (isolation.md §2); ``required`` raises
    ``SandboxError`` before anything runs when this machine (or a Dask
    worker) cannot make the sandbox.  ``make_runner(workers, scheduler)``
    makes the runner the episodes run on (a ``runner.Runner``; default: local
    workers, or Dask with ``scheduler``), called once, only when there is an
    episode to run; evaluate closes what it returns.  A test or a benchmark
    gives its own, to run the command without worker processes.
    ``adopt_code``: a resumed directory whose campaign.json has a policy
    without ``code`` (made before campaign 1.1) takes today's code for it
    (else that is refused).  ``say(text)`` receives what a run tells before
    its episodes: each agent and python policy's code, a code adopted.
    ``rows(row)`` receives each row written this run, once it is on disk.
    """
    warn = warn or _python_warning
    if workers is not None and workers < 1:
        raise CampaignError(f"--workers: expected an integer >= 1, got {workers}.")
    if retries < 0:
        raise CampaignError(f"--retries: expected an integer >= 0, got {retries}.")
    with ResultsWriter(results_dir) as store:  # touches nothing on disk before store.lock()
        summary = _run(
            store,
            campaign_path,
            workers=workers,
            scheduler=scheduler,
            retries=retries,
            retry_failed=retry_failed,
            keep_records=keep_records,
            progress=progress,
            warn=warn,
            sandbox=sandbox,
            make_runner=make_runner or _runner,
            adopt_code=adopt_code,
            say=say or (lambda text: None),
            bounds=bounds,
            rows=rows,
        )
        # What is on disk now, read once, still under the lock: the summary and ranking.json say the same.
        # The run's own structures (the campaign's seed lists, the plan, a resumed directory's counting
        # table) went with _run's frame, the writer's campaign with end_rows(): the reading's own seed
        # lists and counting table never sit in memory beside them (benchmarks/bench_campaign_memory.py).
        ok_rows = OkRows()
        results = read_results(store.path, consumers=(ok_rows,))
        summary.count(results)
        summary.explain(results, FailedRows(results))
        summary.warnings = results.warnings
        summary.ranking = write_ranking(store.path, results, ok_rows)
    return summary


def _run(
    store,
    campaign_path,
    *,
    workers,
    scheduler,
    retries,
    retry_failed,
    keep_records,
    progress,
    warn,
    sandbox,
    make_runner,
    adopt_code,
    say,
    bounds=False,
    rows=None,
):
    """``evaluate`` up to its last row written: the campaign checked, the directory locked and prepared, the
    episodes run; returns the ``Summary`` of this run (its end counts are made by ``evaluate``)."""
    campaign = load_campaign(campaign_path)
    mode = sandbox or "required"
    foreign = foreign_policies(campaign.policies)
    files = [path for entry in foreign for path in policy_files(entry, campaign.folder)]
    if foreign and mode == "required":
        require_sandbox(files)  # here too with Dask: the python modules are checked from here
    elif foreign:
        warn(OFF_WARNING)
    check_python_policies(campaign, mode)
    resolved = resolve(campaign)
    store.lock()
    resolved, torn, adopted, statuses = _prepare(store, campaign, resolved, adopt_code)

    def last_status(key):
        return None if statuses is None else statuses.get(key[0], (key[1], key[2]))

    plan = Plan(campaign, resolved, last_status, retry_failed, store.path, keep_records, mode)
    ran = plan.count()
    # bounds.md §5: a line per key of K; the keys a bounds.jsonl already has keep their line, the others are
    # tasks beside the episodes (read before store.start, which drops a bounds.jsonl that no longer covers K).
    # Only with bounds: a pair per key of K is the most a run would hold per episode.
    keys = (
        [(sc["scenario_hash"], seed) for sc in resolved["scenarios"] for seed in sorted(sc["seeds"])] if bounds else []
    )
    lines = kept_lines(store.file(BOUNDS_FILE)) if bounds else {}
    data = {entry.scenario_hash: entry.data for entry in campaign.scenarios}
    bound_tasks = [(("bounds", *key), BoundsTask(data[key[0]], key[1])) for key in keys if key not in lines]
    runner = None
    if ran or bound_tasks:
        runner = _connect(store, make_runner, workers, scheduler, files if foreign and mode == "required" else None)
    # Said once every check before the first episode has passed (a refused run says one line: why).
    for entry in foreign:
        say(f"ember: policy {entry['name']}: code {entry['code']}")
    for name in adopted:
        say(
            f"ember: policy {name}: {CAMPAIGN_FILE} had no code for its rows (written before campaign 1.1); "
            f"--adopt-code recorded today's code {_code_of(resolved, name)}."
        )
    summary = Summary(sum(len(sc["seeds"]) for sc in resolved["scenarios"]) * len(resolved["policies"]), ran)
    tasks = itertools.chain(bound_tasks, plan.tasks()) if ran or bound_tasks else None
    _write_rows(store, campaign, torn, runner, tasks, retries, summary, lines, progress, warn, rows)
    if bounds:
        write_file(store.path, BOUNDS_FILE, b"".join(lines[key] for key in keys))  # whole, under the lock
    store.end_rows()
    return summary


def _prepare(store, campaign, resolved, adopt_code):
    """The locked directory checked whole and prepared for ``campaign`` before anything runs or is written:
    (the resolved campaign, a torn last line, the policies whose code --adopt-code recorded, a resumed
    directory's counting rows' statuses (a ``CountingTable``) or None)."""
    existing = store.existing()
    torn = b""
    adopted = []
    statuses = None
    if existing is not None:
        torn = existing.torn
        resolved = merge_campaign(
            existing.campaign.value,
            resolved,
            store.file(CAMPAIGN_FILE),
            campaign.code_lists,
            lambda name, code: read_code_list(store.path, name, code),
            adopt_code,
            adopted,
        )
        check_size(
            sum(len(sc["seeds"]) for sc in resolved["scenarios"]),
            len(resolved["policies"]),
            f"{campaign.path} with {store.file(CAMPAIGN_FILE)}",
        )
        statuses = existing.statuses
        del existing  # its parsed campaign.json: what is kept of it is in ``statuses`` and ``resolved``
    try:
        store.prepare(resolved)
    except EmberError:
        store.discard_if_created()
        raise
    return resolved, torn, adopted, statuses


def _connect(store, make_runner, workers, scheduler, sandboxed_files):
    """The runner, connected before anything is written: an unreachable scheduler is bad input, and nothing
    is written.  With ``sandboxed_files`` every Dask worker is asked for the sandbox before any task runs."""
    runner = None
    try:
        runner = make_runner(workers, scheduler)
        if sandboxed_files is not None:
            runner.check_sandbox(sandboxed_files)
    except (CampaignError, SandboxError):
        if runner is not None:
            runner.close(terminate=True)
        store.discard_if_created()
        raise
    return runner


def _write_rows(store, campaign, torn, runner, tasks, retries, summary, lines, progress, warn, rows=None):
    """The run proper: the directory started, ``tasks`` (None: nothing to run) run on ``runner``, each row
    appended and counted in ``summary``, each bounds line kept in ``lines``; the runner closed at the end."""
    ran = summary.ran
    lost = 0
    try:
        if torn:
            warn(f"{store.file(EPISODES_FILE)}: a torn last line ({len(torn)} bytes) was moved to {TORN_FILE}.")
        store.start(torn, [(entry.scenario_id, entry.data) for entry in campaign.scenarios], campaign.code_lists)
        store.remove_temporary_files()  # what a killed run left (its workers had no time to)

        def on_row(row):
            if isinstance(row, bytes):  # a BoundsTask's line
                lines[line_key(row)] = row
                return
            # A worker's RowLine is written as it came; a row made here (a lost worker's) is encoded first.
            line = store.append_line(row) if isinstance(row, RowLine) else store.append(row)
            if rows is not None:
                rows(json.loads(line.line))
            if line.ok:
                summary.this_run_ok += 1
            else:
                summary.this_run_failed += 1
            if progress is not None:
                progress(summary.this_run_ok + summary.this_run_failed, summary.this_run_failed, ran)

        try:
            with _sigterm_raises():
                if tasks is not None:
                    lost = run_tasks(runner, tasks, retries, on_row)
        except BaseException as exc:
            if runner is not None:
                runner.close(terminate=True)
                runner = None
            store.remove_temporary_files()
            if isinstance(exc, ResultsIOError):
                raise ResultsIOError(exc.errno, exc.strerror, exc.filename, note=STOPPED) from None
            raise
    finally:
        if runner is not None:
            runner.close()
            if lost:
                store.remove_temporary_files()  # a worker lost mid-episode left its temporary files


def _code_of(resolved, name):
    return next(policy["code"] for policy in resolved["policies"] if policy["name"] == name)


def _python_warning(text):
    import warnings

    # Past this function, _run and evaluate: the warning names evaluate's caller.
    warnings.warn(text, RuntimeWarning, stacklevel=4)


def _runner(workers, scheduler):
    if scheduler is not None:
        try:
            import distributed  # noqa: F401  (the 'dask' extra)
        except ImportError:
            raise CampaignError("--scheduler needs Dask distributed: pip install 'ember-eval[dask]'.") from None
        from .dask_runner import DaskRunner  # with --scheduler only: a local run loads none of it

        try:
            return DaskRunner(scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            raise CampaignError(
                f"--scheduler {scheduler}: cannot connect to the Dask scheduler: {one_line(exc)}"
            ) from None
    return LocalRunner(workers or os.cpu_count() or 1)
