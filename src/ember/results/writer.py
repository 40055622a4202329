"""The one writer of a results directory (campaign.md §4): lock, prepare, append, sweeps, safe files.

``ResultsWriter`` is what a run holds while it writes a directory: the lock
(one writer), the checks made before the first byte is written (a changed
campaign, a line that is not a row, a planted link: a refused run leaves
the directory as it was), campaign.json and scenarios/ written atomically,
rows appended whole or not at all, torn bytes and temporary files swept.

Every file written into a results directory is written through the safe
file functions of ``ember.files`` (``write_file``, ``make_folder``,
``create_new``, ``replace_into``), which never follow a symbolic link: a
link planted in place of a file or a folder of the directory is refused
with a one-line error naming it, never written through (isolation.md §3).
The results directory itself is the one path that may be a link (the
operator gave it).

Public API (used by campaigns and the hosted service):

- ``ResultsWriter(path)`` with ``lock()``, ``existing()``, ``prepare(campaign)``,
  ``start(torn, scenarios)``, ``append(row)``, ``append_line(line)``, ``end_rows()``, ``remove_temporary_files()``,
  ``discard_if_created()``, ``close()`` (also a context manager), ``file(name)``;
- ``refuse_links(directory)``: the check ``prepare`` makes, for any writer.
"""

import array
import contextlib
import errno
import fcntl
import os

from ..canonical import canonical_json, canonical_json_reference
from ..errors import CampaignError, ResultsError, ResultsIOError
from ..files import LINKED, fsync_directory, make_folder, write_fd, write_file
from .campaign_json import MAX_CAMPAIGN_BYTES
from .code_lists import code_bytes
from .layout import (
    BOUNDS_FILE,
    CAMPAIGN_FILE,
    CODE_DIR,
    DERIVED_FILES,
    EPISODES_FILE,
    SCENARIOS_DIR,
    TOP_LEVEL,
    TORN_FILE,
    WORKER_FOLDERS,
    campaign_temporary,
    code_file,
    is_temporary,
    scenario_file,
)
from .reader import check_campaign, read_results
from .rows import row_line


def campaign_bytes(resolved):
    """campaign.json's bytes (canonical JSON and a newline) of the campaign.json dict ``resolved``.

    A scenario's ``seeds`` may be a ``range`` or an ``array('q')`` (a run's
    compact seeds, ``ember.campaign.seeds``): they are written as the list of
    the same integers would be, a slice at a time, never as a Python int
    and a string per seed all at once.  With lists only, the bytes are
    ``canonical_json_reference``'s.
    """
    scenarios = resolved.get("scenarios")
    if type(scenarios) is not list or not any(_compact(scenario) for scenario in scenarios):
        return canonical_json_reference(resolved) + b"\n"
    parts = []
    for key in sorted(resolved):
        if key == "scenarios":
            encoded = b"[" + b",".join(_scenario_bytes(scenario) for scenario in scenarios) + b"]"
        else:
            encoded = canonical_json_reference(resolved[key])
        parts.append(canonical_json_reference(key) + b":" + encoded)
    return b"{" + b",".join(parts) + b"}\n"


#: Seeds written per slice (a slice's strings are the most held at once).
_SEED_SLICE = 1 << 14


def _compact(scenario):
    """Whether a campaign.json scenario's seeds are compact (a ``range`` or an ``array('q')``), not a list."""
    return type(scenario) is dict and isinstance(scenario.get("seeds"), (range, array.array))


def _scenario_bytes(scenario):
    parts = []
    for key in sorted(scenario):
        value = scenario[key]
        if key == "seeds" and _compact(scenario):
            slices = (
                ",".join(map(str, value[start : start + _SEED_SLICE])).encode()
                for start in range(0, len(value), _SEED_SLICE)
            )
            encoded = b"[" + b",".join(slices) + b"]"
        else:
            encoded = canonical_json_reference(value)
        parts.append(canonical_json_reference(key) + b":" + encoded)
    return b"{" + b",".join(parts) + b"}"


def refuse_links(directory):
    """Refuse a results directory where one of its entries is a symbolic link (``ResultsError``, one line).

    Looks at every top-level name a writer makes and every folder and file
    under ``scenarios/``, ``records/`` and ``logs/``, without following links.
    """

    def refuse(path):
        raise ResultsError(os.path.relpath(path, directory), None, LINKED, directory)

    for name in TOP_LEVEL:
        path = os.path.join(directory, name)
        if os.path.islink(path):
            refuse(path)
    for top in (SCENARIOS_DIR, CODE_DIR, *WORKER_FOLDERS):
        for parent, folders, files in os.walk(os.path.join(directory, top)):
            for name in folders + files:
                if os.path.islink(os.path.join(parent, name)):
                    refuse(os.path.join(parent, name))


@contextlib.contextmanager
def _naming(path):
    """An ``OSError`` inside becomes a ``ResultsIOError`` naming ``path``."""
    try:
        yield
    except ResultsIOError:
        raise
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), exc.filename or path) from None


# -- the directory ----------------------------------------------------------------


def _line_count(path):
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


class ResultsWriter:
    """One results directory, locked for the lifetime of the object (one writer)."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self._lock_fd = None
        self._episodes = None  # a raw file descriptor: each row is one os.write
        self._size = 0  # episodes.jsonl's length after the last whole row
        self._campaign = self._campaign_bytes = None
        self.created = False

    def file(self, name):
        """The path of ``name`` (a layout name) in the directory."""
        return os.path.join(self.path, name)

    def lock(self):
        """Create the folder if needed and take its lock; a second writer gets a CampaignError."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise CampaignError(f"{self.path}: the results directory is a file.")
        self.created = not os.path.exists(self.path)
        try:
            os.makedirs(self.path, exist_ok=True)
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise CampaignError(f"{self.path}: cannot open the results directory: {exc.strerror or exc}.") from None
        try:
            # The lock is on the directory itself: nothing is written to take it, and the
            # kernel drops it when the process dies, however it dies.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise CampaignError(
                    f"{self.path}: another 'ember evaluate' is writing to this results directory (it is locked)."
                ) from None
            raise CampaignError(f"{self.path}: cannot lock the results directory: {exc.strerror or exc}.") from None
        self._lock_fd = fd

    def discard_if_created(self):
        """Remove the folder again if ``lock`` created it (a run refused before its first write leaves nothing)."""
        if self.created:
            with contextlib.suppress(OSError):  # someone put something there meanwhile: leave it
                os.rmdir(self.path)

    def close(self):
        if self._episodes is not None:
            os.close(self._episodes)
            self._episodes = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def existing(self):
        """The checked ``ember.results.Results`` of the directory, or None for a new one. Reads only.

        The whole directory is checked here, before a run writes or runs
        anything: a line the results layer refuses is refused by evaluate
        too, and so is a symbolic link where the writer would write.
        """
        campaign_path = self.file(CAMPAIGN_FILE)
        if not os.path.lexists(campaign_path):
            # An empty episodes.jsonl (and a temporary campaign.json) is what a run killed
            # during its first writes leaves: that is still a new results directory.
            names = [n for n in os.listdir(self.path) if not campaign_temporary(n)]
            episodes = self.file(EPISODES_FILE)
            leftover = names == [EPISODES_FILE] and os.path.isfile(episodes) and os.path.getsize(episodes) == 0
            if names and not leftover:
                raise CampaignError(
                    f"{self.path}: not empty and holds no {CAMPAIGN_FILE}; "
                    "give a new or empty folder, or a results directory."
                )
            refuse_links(self.path)
            return None
        results = read_results(self.path)  # no consumer: a resume needs the counting table only
        # After reading: a link to a FIFO or a device is refused by the reader, saying what it is.
        refuse_links(self.path)
        return results

    def prepare(self, resolved):
        """Check the campaign.json a run will write, before anything is written.

        It must be a campaign.json the results layer reads back: no larger
        than ``MAX_CAMPAIGN_BYTES``, and of its schema.
        """
        data = campaign_bytes(resolved)
        if len(data) > MAX_CAMPAIGN_BYTES:
            raise CampaignError(
                f"{self.file(CAMPAIGN_FILE)}: the campaign's campaign.json would be {len(data):,} bytes, "
                f"more than the {MAX_CAMPAIGN_BYTES:,} a results directory may hold (docs/campaigns.md)."
            )
        # The schema reads seed lists: a compact scenario's are listed for the check alone, then let go
        # (the checked campaign keeps its own arrays, and the run's compact dict as its value).
        listed = [dict(sc, seeds=list(sc["seeds"])) if _compact(sc) else sc for sc in resolved.get("scenarios", ())]
        self._campaign = check_campaign(dict(resolved, scenarios=listed) if listed else resolved, self.path)
        self._campaign.value = resolved
        del listed
        self._campaign_bytes = data

    def start(self, torn, scenarios, code_lists=None):
        """The first writes of a run (after ``prepare``).

        Set torn bytes aside, drop a stale ranking and statistics (and a bounds.jsonl no longer
        covering K), open episodes.jsonl, write campaign.json, then ``scenarios/<scenario_id>.json`` for each
        (scenario_id, scenario dict) of ``scenarios`` and ``code/<policy>.json``
        for each policy name -> code list of ``code_lists``.  An I/O error is a
        ``ResultsIOError`` naming the file.
        """
        episodes = self.file(EPISODES_FILE)
        # episodes.jsonl first: campaign.json never exists without it.
        with _naming(episodes):
            self._episodes = os.open(episodes, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        if torn:
            torn_path = self.file(TORN_FILE)
            with _naming(torn_path):
                fd = os.open(torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            try:
                write_fd(fd, torn, torn_path)
            finally:
                os.close(fd)
            with _naming(episodes):
                os.ftruncate(self._episodes, os.fstat(self._episodes).st_size - len(torn))
        for name in DERIVED_FILES:
            stale = self.file(name)
            if os.path.lexists(stale):
                with _naming(stale):
                    os.remove(stale)
        bounds = self.file(BOUNDS_FILE)
        with _naming(bounds):
            # bounds.md §5: a line per key of K; a resume only adds keys, so fewer lines than K no longer cover it.
            if os.path.lexists(bounds) and _line_count(bounds) != len(self._campaign.keys):
                os.remove(bounds)
        with _naming(episodes):
            self._size = os.fstat(self._episodes).st_size
        write_file(self.path, CAMPAIGN_FILE, self._campaign_bytes)
        self._campaign_bytes = None  # written: a run of 10^6 seeds need not keep its megabytes
        with _naming(self.path):
            fsync_directory(self.path)
        folder = make_folder(self.path, SCENARIOS_DIR)
        for scenario_id, scenario in scenarios:
            write_file(self.path, scenario_file(scenario_id), canonical_json(scenario) + b"\n")
        with _naming(folder):
            fsync_directory(folder)
        if code_lists:
            folder = make_folder(self.path, CODE_DIR)
            for policy, code_list in code_lists.items():
                write_file(self.path, code_file(policy), code_bytes(code_list) + b"\n")
            with _naming(folder):
                fsync_directory(folder)

    def append(self, row):
        """One row (a dict), complete on disk before this returns (one write, then fsync), or not there at all.

        The row is checked by the results layer first (``rows.row_line``):
        what is written is what every reader accepts.  A row longer than a
        reader reads (``MAX_LINE_BYTES``) becomes a failed row saying so.  On
        a short write or any error the file is cut back to its last whole row
        and a ``ResultsIOError`` names it: never a torn row.  Returns the
        ``RowLine`` written.
        """
        return self.append_line(row_line(row, self.path))

    def append_line(self, line):
        """One ``RowLine`` (a row a worker made and checked), its bytes written as they are, as ``append`` writes.

        Only its identity is held against the campaign here: a policy and an
        episode of the campaign; the row's bytes are never decoded again.
        Returns ``line``.
        """
        if self._episodes is None:
            raise ValueError("append: no row may be written before start() or after end_rows()")
        key = (line.scenario_hash, line.seed)
        if line.policy not in self._campaign.policies or key not in self._campaign.keys:
            reason = (
                f"refusing to write a row that is not a row: policy {line.policy!r} with scenario "
                f"{line.scenario_hash!r} and seed {line.seed!r} is not an episode of the campaign"
            )
            raise ResultsError(EPISODES_FILE, None, reason, self.path)
        data = line.line
        try:
            written = os.write(self._episodes, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (wrote {written} of {len(data)} bytes)")
            os.fsync(self._episodes)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._episodes, self._size)
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), self.file(EPISODES_FILE)) from None
        self._size += len(data)
        return line

    def end_rows(self):
        """The run's last row is written: close episodes.jsonl and let go of the campaign rows were checked against.

        The lock stays (``close`` drops it).  What a run reads back under the
        lock then does not sit in memory beside the campaign of ``prepare``
        (its seed lists, a few dozen bytes per episode of K).  ``append``
        after it raises ``ValueError``.
        """
        if self._episodes is not None:
            os.close(self._episodes)
            self._episodes = None
        self._campaign = self._campaign_bytes = None

    def remove_temporary_files(self):
        """Remove what workers left under temporary names in records/ and logs/ (a killed worker, a full disk).

        Only ever called with the lock held: no other run is writing them.
        """
        for folder in WORKER_FOLDERS:
            for parent, _, names in os.walk(self.file(folder)):
                for name in names:
                    if is_temporary(name):
                        with contextlib.suppress(OSError):
                            os.remove(os.path.join(parent, name))
