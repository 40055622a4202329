"""The results directory (campaign.md §4): lock, campaign.json, rows, resume, torn lines.

Everything that can refuse a run (the lock, a changed campaign, a line that
is not a row) is decided before the first byte is written: a refused run
leaves the directory as it was.
"""

import contextlib
import errno
import fcntl
import json
import os

from ..canonical import (
    canonical_json,
    canonical_json_reference,
)  # rows hold floats: json.dumps spelling (5e-05), which orjson does not write
from ..errors import CampaignError, ResultsError, ResultsIOError
from ..files import append_file, write_atomically
from ..results import (
    CAMPAIGN_FILE,
    EPISODES_FILE,
    MAX_CAMPAIGN_BYTES,
    MAX_LINE_BYTES,
    RANKING_FILE,
    SCENARIOS_DIR,
    STATISTICS_FILE,
    TORN_FILE,
    check_campaign,
    read_results,
)
from ..results.schema import Invalid, check_row
from .logs import TEMPORARY_MARK

#: campaign.json versions that must match on resume; "package" may differ.
RESULT_VERSIONS = ("simulator", "observation", "metrics", "ranking")
#: The folders where workers write files under temporary names (kept records, logs).
WORKER_FOLDERS = ("records", "logs")


def episode_key(row):
    return (row["policy"], row["scenario_hash"], row["seed"])


# -- comparing a resumed campaign -------------------------------------------------------


def merge_campaign(old, new, where):
    """The campaign.json of a resume: ``old`` plus what ``new`` adds.

    Any other change is a CampaignError naming the first difference.
    """

    def refuse(text):
        raise CampaignError(f"{where} differs from the campaign file: {text}; results of two campaigns never mix.")

    if old["campaign"] != new["campaign"]:
        refuse(f"campaign is {old['campaign']!r} there, {new['campaign']!r} now")
    for key in RESULT_VERSIONS:
        if old["versions"].get(key) != new["versions"][key]:
            refuse(f"versions.{key} is {old['versions'].get(key)!r} there, {new['versions'][key]!r} now")
    new_scenarios = {sc["scenario_id"]: sc for sc in new["scenarios"]}
    scenarios = []
    for i, sc, now in _namesakes(old["scenarios"], new_scenarios, "scenario_id", "scenarios", refuse):
        if now["scenario_hash"] != sc["scenario_hash"]:
            refuse(
                f"scenarios[{i}] ({sc['scenario_id']}) has content hash {sc['scenario_hash']} there, "
                f"{now['scenario_hash']} now"
            )
        seeds, dropped = _seed_union(sc["seeds"], now["seeds"])
        if dropped is not None:
            refuse(f"scenarios[{i}] ({sc['scenario_id']}) lost seed {dropped} (a resume may only add seeds)")
        scenarios.append(dict(now, seeds=seeds))
    for sc in new["scenarios"]:
        if sc["scenario_id"] in new_scenarios:
            if any(sc["scenario_hash"] == kept["scenario_hash"] for kept in scenarios):
                refuse(f"scenario {sc['scenario_id']} has the content hash of another scenario there")
            scenarios.append(sc)
    new_policies = {p["name"]: p for p in new["policies"]}
    policies = []
    for i, policy, now in _namesakes(old["policies"], new_policies, "name", "policies", refuse):
        if now != policy:
            refuse(f"policies[{i}] ({policy['name']}) is {_source(policy)} there, {_source(now)} now")
        policies.append(policy)
    policies.extend(p for p in new["policies"] if p["name"] in new_policies)
    return {"campaign": new["campaign"], "versions": new["versions"], "scenarios": scenarios, "policies": policies}


def _seed_union(old, new):
    """(the ascending union of two seed lists, the smallest seed of ``old`` missing from ``new`` or None).

    Both ascend (as campaign.json and the campaign file's seeds do): one
    walk, no set of a million seeds.  Otherwise, with sets.
    """
    if not (_ascending(old) and _ascending(new)):
        dropped = sorted(set(old) - set(new))
        return sorted(set(old) | set(new)), (dropped[0] if dropped else None)
    union, i, j = [], 0, 0
    while i < len(old) and j < len(new):
        if old[i] < new[j]:
            return None, old[i]
        if old[i] == new[j]:
            i += 1
        union.append(new[j])
        j += 1
    if i < len(old):
        return None, old[i]
    union.extend(new[j:])
    return union, None


def _ascending(seeds):
    return all(seeds[k - 1] < seeds[k] for k in range(1, len(seeds)))


def _namesakes(old, new_by_name, key, what, refuse):
    """Each entry of ``old`` with its index and its namesake, popped from ``new_by_name``.

    A name missing from ``new_by_name`` is refused (a resume may only add);
    the names left in ``new_by_name`` are what the new campaign adds.
    """
    for i, entry in enumerate(old):
        now = new_by_name.pop(entry[key], None)
        if now is None:
            refuse(f"{what}[{i}] ({entry[key]}) is missing from the campaign file (a resume may only add)")
        yield i, entry, now


def _source(policy):
    return ", ".join(f"{k} = {json.dumps(v)}" for k, v in policy.items() if k != "name") or "without a source"


# -- the directory ----------------------------------------------------------------


class ResultsDir:
    """One results directory, locked for the lifetime of the object (one writer)."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self._lock_fd = None
        self._episodes = None  # a raw file descriptor: each row is one os.write
        self._size = 0  # episodes.jsonl's length after the last whole row
        self._campaign = self._campaign_bytes = None
        self.created = False

    def file(self, name):
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
        anything: a line the results layer refuses is refused by evaluate too.
        """
        campaign_path = self.file(CAMPAIGN_FILE)
        if not os.path.lexists(campaign_path):
            # An empty episodes.jsonl (and a temporary campaign.json) is what a run killed
            # during its first writes leaves: that is still a new results directory.
            # files.write_atomically's temporary names are ".campaign.json.tmpPID.N".
            temporary = (CAMPAIGN_FILE + ".tmp", f".{CAMPAIGN_FILE}.tmp")
            names = [n for n in os.listdir(self.path) if not n.startswith(temporary)]
            episodes = self.file(EPISODES_FILE)
            leftover = names == [EPISODES_FILE] and os.path.isfile(episodes) and os.path.getsize(episodes) == 0
            if names and not leftover:
                raise CampaignError(
                    f"{self.path}: not empty and holds no {CAMPAIGN_FILE}; "
                    "give a new or empty folder, or a results directory."
                )
            return None
        return read_results(self.path)  # no consumer: a resume needs the counting table only

    def prepare(self, resolved):
        """Check the campaign.json a run will write, before anything is written.

        It must be a campaign.json the results layer reads back: no larger
        than ``MAX_CAMPAIGN_BYTES``, and of its schema.
        """
        data = canonical_json_reference(resolved) + b"\n"
        if len(data) > MAX_CAMPAIGN_BYTES:
            raise CampaignError(
                f"{self.file(CAMPAIGN_FILE)}: the campaign's campaign.json would be {len(data):,} bytes, "
                f"more than the {MAX_CAMPAIGN_BYTES:,} a results directory may hold (docs/campaigns.md)."
            )
        self._campaign = check_campaign(resolved, self.path)
        self._campaign_bytes = data

    def start(self, torn, scenarios):
        """The first writes of a run (after ``prepare``).

        Set torn bytes aside, drop a stale ranking and statistics, open episodes.jsonl,
        write campaign.json, then ``scenarios/<scenario_id>.json`` for each
        (scenario_id, scenario dict) of ``scenarios``.  An I/O error is a
        ``ResultsIOError`` naming the file.
        """
        campaign_bytes = self._campaign_bytes
        episodes = self.file(EPISODES_FILE)
        if torn:
            with _naming(self.file(TORN_FILE)), append_file(self.file(TORN_FILE)) as handle:
                handle.write(torn)
                handle.flush()
                os.fsync(handle.fileno())
            with _naming(episodes):
                os.truncate(episodes, os.path.getsize(episodes) - len(torn))
        for name in (RANKING_FILE, STATISTICS_FILE):
            stale = self.file(name)
            if os.path.lexists(stale):
                with _naming(stale):
                    os.remove(stale)

        def saver(data):
            def save(stream):
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())

            return save

        # episodes.jsonl first: campaign.json never exists without it.
        with _naming(episodes):
            self._episodes = os.open(episodes, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            self._size = os.fstat(self._episodes).st_size
        with _naming(self.file(CAMPAIGN_FILE)):
            write_atomically(self.file(CAMPAIGN_FILE), saver(campaign_bytes))
        with _naming(self.path):
            _fsync_dir(self.path)
        folder = self.file(SCENARIOS_DIR)
        with _naming(folder):
            os.makedirs(folder, exist_ok=True)
        for scenario_id, scenario in scenarios:
            path = os.path.join(folder, f"{scenario_id}.json")
            with _naming(path):
                write_atomically(path, saver(canonical_json(scenario) + b"\n"))
        with _naming(folder):
            _fsync_dir(folder)

    def append(self, row):
        """One row, complete on disk before this returns (one write, then fsync), or not there at all.

        The row is checked by the results layer first: what is written is
        what every reader accepts.  A row longer than a reader reads
        (``MAX_LINE_BYTES``) becomes a failed row saying so.  On a short
        write or any error the file is cut back to its last whole row and
        a ``ResultsIOError`` names it: never a torn row.
        """
        line = canonical_json_reference(row) + b"\n"
        if len(line) > MAX_LINE_BYTES:
            row = dict(
                row,
                status="failed",
                error=f"the row is {len(line):,} bytes, more than the {MAX_LINE_BYTES:,} a row may have "
                "(docs/campaigns.md)",
                metrics=None,
                steps=None,
                record=None,
                record_sha256=None,
            )
            line = canonical_json_reference(row) + b"\n"
        try:
            check_row(row, self._campaign)
        except Invalid as exc:  # EMBER made a row it cannot read back: a defect, never written
            reason = f"refusing to write a row that is not a row: {exc}"
            raise ResultsError(EPISODES_FILE, None, reason, self.path) from None
        try:
            written = os.write(self._episodes, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (wrote {written} of {len(line)} bytes)")
            os.fsync(self._episodes)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._episodes, self._size)
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), self.file(EPISODES_FILE)) from None
        self._size += len(line)
        return row

    def remove_temporary_files(self):
        """Remove what workers left under temporary names in records/ and logs/ (a killed worker, a full disk).

        Only ever called with the lock held: no other run is writing them.
        """
        for folder in WORKER_FOLDERS:
            for parent, _, names in os.walk(self.file(folder)):
                for name in names:
                    if TEMPORARY_MARK in name:
                        with contextlib.suppress(OSError):
                            os.remove(os.path.join(parent, name))


@contextlib.contextmanager
def _naming(path):
    """An ``OSError`` inside becomes a ``ResultsIOError`` naming ``path``."""
    try:
        yield
    except ResultsIOError:
        raise
    except OSError as exc:
        raise ResultsIOError(exc.errno, exc.strerror or str(exc), exc.filename or path) from None


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
