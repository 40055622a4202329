"""One attempt at one (policy, episode): the function every worker runs.

``run_task(task) -> row`` never raises for a failing source (an agent that
crashes, a python policy that raises, a bad submitted record): that is a
``failed`` row with a one-line reason (campaign.md §3).  It is idempotent:
a kept record or an agent log is written under a temporary name and
renamed into place, so an attempt that runs twice (a Dask task rerun after
its worker was lost) leaves one complete file.

The two ways an episode is measured live here and nowhere else:
``measure`` (a policy run in EMBER's simulator) and ``measure_file``
(a submitted record), both through the engine's entry points.
"""

import copy
import gzip
import hashlib
import importlib
import os
import signal
import sys
import threading
import time
import uuid

from ..agent import AgentError, AgentPolicy
from ..engine import episode_metrics, measure_run
from ..errors import ActionError, EmberError
from ..scenario import compile_scenario
from ..sim.policies import make_policy
from .spec import module_path, split_python_source

RECORD_SUFFIXES = (".record", ".record.gz", ".record.zst")
_SHOWN = 300


class EpisodeFailure(Exception):
    """The source of an episode failed: the message is the row's one-line reason."""


class _PolicyTimeout(BaseException):
    """Raised by the alarm inside a python policy.

    A BaseException: the policy's own ``except Exception`` must not eat it.
    """


def one_line(text):
    text = " ".join(str(text).split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


# -- measuring ----------------------------------------------------------------


def measure(scenario, policy, seed, keep=None):
    """Run ``policy`` through the engine's simulator-driven entry point.

    Returns (metrics dict, record SHA-256 hex or None, final state).  With
    ``keep`` (a path) the record is written there, complete or not at all,
    and hashed as it is written; without it no record byte is encoded:
    steps go from the simulator straight to the accumulators.
    """
    measured = measure_run(scenario, policy, seed, out=keep, live=False)
    return measured.metrics.to_dict(), measured.record_sha256, measured.final_state


def _hashed_chunks(path, sha):
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(1 << 16)
            if not chunk:
                return
            sha.update(chunk)
            yield chunk


def _decompressed_sha256(path, head):
    """SHA-256 of what a (valid, already authenticated) compressed record decompresses to."""
    sha = hashlib.sha256()
    if head.startswith(b"\x1f\x8b"):
        # Multi-member gzip is one stream, as the engine reads it.
        stream = gzip.open(path, "rb")  # noqa: SIM115 (closed by the with below)
    else:
        try:
            from compression import zstd  # Python 3.14+

            stream = zstd.open(path, "rb")
        except ImportError:
            import zstandard  # the 'zstd' extra: the engine has just read this record with it

            raw = open(path, "rb")  # noqa: SIM115 (closed with the reader: closefd)
            stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    with stream:
        while True:
            chunk = stream.read(1 << 16)
            if not chunk:
                return sha.hexdigest()
            sha.update(chunk)


def measure_file(scenario, path):
    """Authenticate and measure a submitted record file (plain, gzip or zstd).

    Returns (metrics dict, SHA-256 hex of its decompressed bytes).
    """
    sha = hashlib.sha256()
    metrics = episode_metrics(scenario, _hashed_chunks(path, sha)).to_dict()
    with open(path, "rb") as handle:
        head = handle.read(4)
    if head.startswith((b"\x1f\x8b", b"\x28\xb5\x2f\xfd")):
        return metrics, _decompressed_sha256(path, head)
    return metrics, sha.hexdigest()


# -- policies -----------------------------------------------------------------


class _PythonPolicy:
    """A campaign python policy: exceptions and illegal answers become one-line failures, with a per-step time bound."""

    def __init__(self, policy, timeout):
        self.policy = policy
        self.timeout = timeout
        self.step = 0

    def __call__(self, observation):
        self.step = observation["step"]
        started = time.perf_counter()
        alarm = threading.current_thread() is threading.main_thread()
        try:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, self.timeout)
            try:
                actions = self.policy(observation)
            finally:
                if alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except _PolicyTimeout:
            raise EpisodeFailure(self._too_slow()) from None
        except Exception as exc:  # noqa: BLE001 (a policy is foreign code)
            raise EpisodeFailure(f"step {self.step}: the python policy raised {type(exc).__name__}: {exc}") from None
        if not alarm and time.perf_counter() - started > self.timeout:
            # Off the main thread (a Dask worker) no alarm can interrupt the call: it is judged when it returns.
            raise EpisodeFailure(self._too_slow())
        return actions

    def _too_slow(self):
        return f"step {self.step}: the python policy did not answer within {self.timeout:g} s (step_timeout)."


def _raise_timeout(signum, frame):
    raise _PolicyTimeout()


def _python_factory(text, folder):
    module_name, name = split_python_source(text)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # stays: the module is imported once per worker process
    with module_path(folder):
        module = importlib.import_module(module_name)
    return getattr(module, name)


def _run_python(entry, scenario, seed, folder, keep):
    try:
        factory = _python_factory(entry["python"], folder)
        policy = factory(copy.deepcopy(scenario.data))
    except Exception as exc:  # noqa: BLE001 (a factory is foreign code)
        raise EpisodeFailure(
            f"the python policy {entry['python']} could not be made: {type(exc).__name__}: {exc}"
        ) from None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _raise_timeout)
    wrapped = _PythonPolicy(policy, entry["step_timeout"])
    try:
        return measure(scenario, wrapped, seed, keep)
    except ActionError as exc:
        raise EpisodeFailure(f"step {wrapped.step}: the python policy returned illegal actions: {exc}") from None


def _run_agent(entry, scenario, seed, folder, keep, log_path):
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    tmp = f"{log_path}.tmp{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as log:
            try:
                with AgentPolicy(entry["agent"], scenario.data, entry["step_timeout"], cwd=folder, stderr=log) as agent:
                    try:
                        result = measure(scenario, agent, seed, keep)
                    except ActionError as exc:
                        raise agent.refused(exc) from exc
                    agent.finish(result[2])
            except AgentError as exc:
                raise EpisodeFailure(str(exc)) from None
    finally:
        # The log is kept whatever the outcome: a failed agent's stderr is what its author needs.
        os.replace(tmp, log_path)
    return result


def _submitted_file(entry, scenario_id, seed, folder):
    base = os.path.join(folder, entry["records"], scenario_id, str(seed))
    found = [base + suffix for suffix in RECORD_SUFFIXES if os.path.isfile(base + suffix)]
    shown = os.path.join(entry["records"], scenario_id, str(seed))
    if not found:
        raise EpisodeFailure(f"no submitted record {shown}.record (nor .record.gz, .record.zst).")
    if len(found) > 1:
        names = ", ".join(os.path.basename(p) for p in found)
        raise EpisodeFailure(f"two files for one episode in {os.path.dirname(shown)}: {names}.")
    return found[0]


# -- the attempt ----------------------------------------------------------------


def _kept_path(results, policy, scenario_id, seed):
    return os.path.join("records", policy, scenario_id, f"{seed}.record.gz")


def _attempt(task):
    entry = task["policy"]
    scenario = compile_scenario(task["scenario"])
    seed, folder = task["seed"], task["folder"]
    scenario_id, policy_name = scenario.scenario_id, entry["name"]
    if "records" in entry:
        path = _submitted_file(entry, scenario_id, seed, folder)
        try:
            metrics, sha = measure_file(scenario, path)
        except EmberError as exc:
            raise EpisodeFailure(f"{os.path.relpath(path, folder)}: {exc}") from None
        except OSError as exc:
            raise EpisodeFailure(f"{os.path.relpath(path, folder)}: cannot read: {exc.strerror or exc}") from None
        if metrics["seed"] != seed:
            raise EpisodeFailure(
                f"{os.path.relpath(path, folder)}: the record's header names seed {metrics['seed']}, "
                f"its place seed {seed}."
            )
        return metrics, os.path.relpath(path, folder), sha
    kept = tmp = None
    if task["keep_records"]:
        kept = _kept_path(task["results"], policy_name, scenario_id, seed)
        target = os.path.join(task["results"], kept)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # Measured into a temporary name (ending .record.gz: the record opener compresses by the name),
        # renamed into place only once the whole attempt succeeded (an agent's end message included),
        # so an attempt that runs twice leaves one complete file and a failed one none.
        tmp = os.path.join(os.path.dirname(target), f".{seed}.tmp{uuid.uuid4().hex}.record.gz")
    try:
        if "builtin" in entry:
            result = measure(scenario, make_policy(entry["builtin"], scenario, seed), seed, tmp)
        elif "python" in entry:
            result = _run_python(entry, scenario, seed, folder, tmp)
        else:
            log = os.path.join(task["results"], "logs", policy_name, scenario_id, f"{seed}.stderr")
            result = _run_agent(entry, scenario, seed, folder, tmp, log)
        metrics, sha, _ = result
        if kept:
            os.replace(tmp, target)
    finally:
        if tmp is not None and os.path.lexists(tmp):
            os.remove(tmp)
    return metrics, kept, sha


def run_task(task):
    """One attempt at one episode -> its row (campaign.md §4)."""
    started = time.perf_counter()
    row = {
        "scenario_id": task["scenario_id"],
        "scenario_hash": task["scenario_hash"],
        "seed": task["seed"],
        "policy": task["policy"]["name"],
        "status": "ok",
        "error": None,
        "metrics": None,
        "steps": None,
        "record": None,
        "record_sha256": None,
    }
    try:
        metrics, record, sha = _attempt(task)
    except EpisodeFailure as exc:
        row.update(status="failed", error=one_line(exc))
    except EmberError as exc:  # the simulator or engine refused what EMBER itself produced: still one row
        row.update(status="failed", error=one_line(f"{type(exc).__name__}: {exc}"))
    except OSError as exc:
        row.update(status="failed", error=one_line(f"{exc.filename or 'I/O'}: {exc.strerror or exc}"))
    else:
        row.update(metrics=metrics, steps=metrics["time"]["episode_steps"], record=record, record_sha256=sha)
    row["elapsed_s"] = round(time.perf_counter() - started, 3)
    return row
