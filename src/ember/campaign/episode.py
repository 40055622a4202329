"""One attempt at one (policy, episode): how each source is measured.

Failures of a source (an agent that crashes, a python policy that raises,
a bad submitted record) are ``EpisodeFailure``: the row's one-line reason
(campaign.md §3).  Writing the results directory (a kept record) is EMBER's
business: an I/O error there is a ``ResultsIOError`` naming the file, never
charged to the policy.  A kept record is written under a temporary name and
renamed into place, so an attempt that runs twice (a Dask task rerun after
its worker was lost) leaves one complete file.

The two ways an episode is measured live here and nowhere else:
``measure`` (a policy run in EMBER's simulator) and ``measure_file``
(a submitted record), both through the engine's entry points.  Built-in
and submitted episodes are measured in the worker itself, which loads
nothing of the boundary for them; agents and python policies run in an
episode process (``episode_process.run_foreign``, started by ``watch.py``),
EMBER's own, whose policy process is across the boundary (isolation.md §1).
"""

import contextlib
import os
import stat
import uuid

from ..engine.run import measure_run
from ..errors import EmberError, ResultsIOError
from ..files import make_folder, replace_into
from ..results.layout import is_temporary, kept_record, kept_record_temporary

RECORD_SUFFIXES = (".record", ".record.gz", ".record.zst")


class EpisodeFailure(Exception):
    """The source of an episode failed: the message is the row's reason (made one line by the row constructor)."""


# -- measuring ----------------------------------------------------------------


def measure(scenario, policy, seed, keep=None):
    """Run ``policy`` through the engine's simulator-driven entry point.

    Returns (metrics dict, record SHA-256 hex or None, final state).  With
    ``keep`` (a path) the record is written there, complete or not at all,
    and hashed as it is written; without it no record byte is encoded:
    steps go from the simulator straight to the accumulators.
    """
    measured = measure_run(scenario, policy, seed, out=keep, live=False)
    return measured.metrics.release(), measured.record_sha256, measured.final_state


def measure_file(scenario, path):
    """Authenticate and measure a submitted record file (plain, gzip or zstd), in one read.

    Returns (metrics dict, SHA-256 hex of its decompressed bytes), both from
    the engine's one entry point (``authenticate_record``).
    """
    # The reading side (record opener, parser, checks) is loaded by the first submitted record:
    # a worker that runs built-in policies only never reads a record.
    from ..engine.authenticate import authenticate_record

    metrics, sha = authenticate_record(scenario, path)
    return metrics.to_dict(), sha


# -- submitted records -----------------------------------------------------------------


def submitted_file(entry, scenario_id, seed, folder):
    """The one submitted file of an episode; anything else (none, two, not a file) is an ``EpisodeFailure``."""
    from ..results.reader import file_kind  # a submitted record's path only: a built-in's worker never reads one

    base = os.path.join(folder, entry["records"], scenario_id, str(seed))
    shown = os.path.join(entry["records"], scenario_id, str(seed))
    found = []
    for suffix in RECORD_SUFFIXES:
        try:
            found.append((base + suffix, os.stat(base + suffix)))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise EpisodeFailure(f"{shown}{suffix}: cannot read: {exc.strerror or exc}") from None
    if not found:
        raise EpisodeFailure(f"no submitted record {shown}.record (nor .record.gz, .record.zst).")
    if len(found) > 1:
        names = ", ".join(os.path.basename(p) for p, _ in found)
        raise EpisodeFailure(f"two files for one episode in {os.path.dirname(shown)}: {names}.")
    path, info = found[0]
    if not stat.S_ISREG(info.st_mode):
        raise EpisodeFailure(
            f"{os.path.relpath(path, folder)} is {file_kind(info.st_mode)}, not a regular file: "
            "a submitted record is a file."
        )
    return path


def measure_submitted(entry, scenario, seed, folder):
    """(metrics, record path relative to the campaign folder, SHA-256) of a submitted record."""
    path = submitted_file(entry, scenario.scenario_id, seed, folder)
    shown = os.path.relpath(path, folder)
    try:
        metrics, sha = measure_file(scenario, path)
    except EmberError as exc:
        raise EpisodeFailure(f"{shown}: {exc}") from None
    except OSError as exc:
        raise EpisodeFailure(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if metrics["seed"] != seed:
        raise EpisodeFailure(f"{shown}: the record's header names seed {metrics['seed']}, its place seed {seed}.")
    return metrics, shown, sha


# -- kept records ---------------------------------------------------------------------


class KeptRecord:
    """A kept record in the making: measured into ``tmp``, renamed to ``target`` by ``commit``.

    ``tmp`` ends ``.record.gz`` (the record opener compresses by the name)
    and holds ``.tmp`` (a run that finds it left over removes it).  An
    ``OSError`` writing it is the results directory's: a ``ResultsIOError``
    naming the kept record.
    """

    def __init__(self, results, policy, scenario_id, seed, tmp=None):
        self.results = results
        self.relative = kept_record(policy, scenario_id, seed)
        self.target = os.path.join(results, self.relative)
        folder = os.path.dirname(self.target)
        self.tmp = tmp or os.path.join(folder, kept_record_temporary(seed, uuid.uuid4().hex))

    def _error(self, exc):
        return ResultsIOError(exc.errno, exc.strerror or str(exc), self.target)

    @contextlib.contextmanager
    def writing(self):
        """Around the measuring: the folder made (never through a link), and an ``OSError`` about ``tmp``
        made the directory's."""
        make_folder(self.results, os.path.dirname(self.relative))
        try:
            yield self.tmp
        except ResultsIOError:
            raise
        except OSError as exc:
            if exc.filename not in (self.tmp, self.target):
                raise  # not the record's: not ours to rename
            raise self._error(exc) from None

    def commit(self):
        replace_into(self.tmp, self.target)

    def discard(self):
        """Remove ``tmp``, and what the record opener left beside it under a temporary name."""
        folder, name = os.path.split(self.tmp)
        with contextlib.suppress(OSError):
            for entry in os.listdir(folder):
                if entry == name or (entry.startswith(f".{name}.") and is_temporary(entry)):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(folder, entry))


# -- in the worker ----------------------------------------------------------------------


def run_builtin(entry, scenario, seed, kept):
    """(metrics, SHA-256 or None) of a built-in policy's episode, its record kept when ``kept``."""
    policy = entry["builtin"]  # by name: measure_run makes it for a shared-lists simulator (decisions.md, "Scale")
    if kept is None:
        metrics, sha, _ = measure(scenario, policy, seed)
        return metrics, sha
    try:
        with kept.writing() as tmp:
            metrics, sha, _ = measure(scenario, policy, seed, tmp)
        kept.commit()
    finally:
        kept.discard()
    return metrics, sha
