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
    canonical_json_reference,
)  # rows hold floats: json.dumps spelling (5e-05), which orjson does not write
from ..errors import CampaignError
from ..files import append_file, write_atomically

CAMPAIGN_FILE = "campaign.json"
EPISODES_FILE = "episodes.jsonl"
TORN_FILE = "episodes.jsonl.torn"
RANKING_FILE = "ranking.json"
#: Written only by 'ember stats -o'; like ranking.json it describes rows a new run may change.
STATISTICS_FILE = "statistics.json"
ROW_KEYS = frozenset(
    (
        "scenario_id",
        "scenario_hash",
        "seed",
        "policy",
        "status",
        "error",
        "metrics",
        "steps",
        "record",
        "record_sha256",
        "elapsed_s",
    )
)
#: campaign.json versions that must match on resume; "package" may differ.
RESULT_VERSIONS = ("simulator", "observation", "metrics", "ranking")
_SOURCE_KEYS = ("builtin", "agent", "python", "records")


def _strict_pairs(pairs):
    value = dict(pairs)
    if len(value) != len(pairs):
        seen = set()
        raise ValueError(f"duplicate key {next(k for k, _ in pairs if k in seen or seen.add(k))!r}")
    return value


def _no_constant(token):
    raise ValueError(f"{token} is not JSON")


def strict_json(data):
    """Parse strict JSON text (UTF-8, no duplicate keys, no NaN/Infinity); raises ValueError."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=_strict_pairs, parse_constant=_no_constant)


def episode_key(row):
    return (row["policy"], row["scenario_hash"], row["seed"])


# -- reading --------------------------------------------------------------------


def read_campaign_json(path):
    """campaign.json -> dict, checked enough to compare and to index rows; raises CampaignError."""
    try:
        with open(path, "rb") as handle:
            value = strict_json(handle.read())
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CampaignError(f"{path}: not valid JSON: {exc}.") from None
    problem = _campaign_shape(value)
    if problem:
        raise CampaignError(f"{path}: {problem}")
    return value


def _campaign_shape(value):
    if not isinstance(value, dict) or set(value) != {"campaign", "versions", "scenarios", "policies"}:
        return "expected an object with exactly the keys campaign, versions, scenarios, policies."
    if not isinstance(value["versions"], dict) or any(
        not isinstance(value["versions"].get(k), str) for k in RESULT_VERSIONS
    ):
        return f"$.versions: expected strings {', '.join(RESULT_VERSIONS)}."
    if not isinstance(value["scenarios"], list) or not isinstance(value["policies"], list):
        return "$.scenarios and $.policies must be arrays."
    hashes = set()
    for i, sc in enumerate(value["scenarios"]):
        if not isinstance(sc, dict) or set(sc) != {"scenario_id", "scenario_hash", "source", "seeds"}:
            return f"$.scenarios[{i}]: expected exactly the keys scenario_id, scenario_hash, source, seeds."
        seeds = sc["seeds"]
        if not isinstance(seeds, list) or any(type(s) is not int for s in seeds) or len(set(seeds)) != len(seeds):
            return f"$.scenarios[{i}].seeds: expected an array of distinct integers."
        if sc["scenario_hash"] in hashes:
            return f"$.scenarios[{i}].scenario_hash: repeats another scenario's."
        hashes.add(sc["scenario_hash"])
    for i, policy in enumerate(value["policies"]):
        if not isinstance(policy, dict) or not isinstance(policy.get("name"), str):
            return f"$.policies[{i}]: expected an object with a name."
    return None


class Rows:
    """The rows of an episodes.jsonl, checked against a campaign.json: counting status per (policy, key)."""

    def __init__(self, campaign):
        self.policies = {p["name"] for p in campaign["policies"]}
        self.keys = {}  # (scenario_hash, seed) -> scenario_id
        for sc in campaign["scenarios"]:
            for seed in sc["seeds"]:
                self.keys[(sc["scenario_hash"], seed)] = sc["scenario_id"]
        self.counting = {}  # (policy, scenario_hash, seed) -> the last row
        self.count = 0

    def add(self, line, where):
        try:
            row = strict_json(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise CampaignError(f"{where}: not a row (not valid JSON: {exc}).") from None
        if not isinstance(row, dict) or set(row) != ROW_KEYS:
            raise CampaignError(
                f"{where}: not a row: expected an object with exactly the keys {', '.join(sorted(ROW_KEYS))}."
            )
        for key in ("scenario_id", "scenario_hash", "policy"):
            if not isinstance(row[key], str):
                raise CampaignError(f"{where}: not a row: {key} must be a string, got {type(row[key]).__name__}.")
        if row["status"] not in ("ok", "failed"):
            raise CampaignError(f'{where}: not a row: status must be "ok" or "failed", got {row["status"]!r}.')
        if type(row["seed"]) is not int:  # a boolean is not a seed
            raise CampaignError(f"{where}: not a row: seed must be an integer, got {row['seed']!r}.")
        if (row["status"] == "ok") != isinstance(row["metrics"], dict):
            raise CampaignError(f"{where}: not a row: metrics must be an object on ok rows and null on failed rows.")
        if row["policy"] not in self.policies:
            raise CampaignError(f"{where}: the row's policy {row['policy']!r} is not in campaign.json.")
        scenario_id = self.keys.get((row["scenario_hash"], row["seed"]))
        if scenario_id is None or scenario_id != row["scenario_id"]:
            raise CampaignError(
                f"{where}: the row's episode ({row['scenario_id']}, {row['scenario_hash']}, seed {row['seed']}) "
                "is not in campaign.json."
            )
        key = episode_key(row)
        previous = self.counting.get(key)
        if previous is not None and previous["status"] == "ok":
            raise CampaignError(
                f"{where}: a row after an ok row for policy {row['policy']!r}, {row['scenario_id']} seed {row['seed']}."
            )
        self.counting[key] = row
        self.count += 1


def read_rows(path, campaign):
    """(Rows, torn bytes) of an episodes.jsonl; a line that is not a row is a CampaignError naming path:line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    cut = data.rfind(b"\n") + 1
    rows = Rows(campaign)
    lines = data[:cut].split(b"\n")[:-1]
    for number, line in enumerate(lines, 1):
        rows.add(line, f"{path}:{number}")
    return rows, data[cut:]


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
        dropped = sorted(set(sc["seeds"]) - set(now["seeds"]))
        if dropped:
            refuse(f"scenarios[{i}] ({sc['scenario_id']}) lost seed {dropped[0]} (a resume may only add seeds)")
        scenarios.append(dict(now, seeds=sorted(set(sc["seeds"]) | set(now["seeds"]))))
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
        self._episodes = None
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
            self._episodes.close()
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
        """(campaign.json dict, Rows, torn bytes), or None for a new results directory. Reads only."""
        campaign_path = self.file(CAMPAIGN_FILE)
        if not os.path.exists(campaign_path):
            # An empty episodes.jsonl (and a temporary campaign.json) is what a run killed
            # during its first writes leaves: that is still a new results directory.
            names = [n for n in os.listdir(self.path) if not n.startswith(CAMPAIGN_FILE + ".tmp")]
            leftover = names == [EPISODES_FILE] and os.path.getsize(self.file(EPISODES_FILE)) == 0
            if names and not leftover:
                raise CampaignError(
                    f"{self.path}: not empty and holds no {CAMPAIGN_FILE}; "
                    "give a new or empty folder, or a results directory."
                )
            return None
        old = read_campaign_json(campaign_path)
        episodes = self.file(EPISODES_FILE)
        if not os.path.exists(episodes):
            raise CampaignError(f"{episodes}: missing next to {CAMPAIGN_FILE}.")
        rows, torn = read_rows(episodes, old)
        return old, rows, torn

    def start(self, resolved, torn):
        """The first writes of a run.

        Set torn bytes aside, drop a stale ranking and statistics, write campaign.json, open episodes.jsonl.
        """
        episodes = self.file(EPISODES_FILE)
        if torn:
            with append_file(self.file(TORN_FILE)) as handle:
                handle.write(torn)
                handle.flush()
                os.fsync(handle.fileno())
            os.truncate(episodes, os.path.getsize(episodes) - len(torn))
        for name in (RANKING_FILE, STATISTICS_FILE):
            stale = self.file(name)
            if os.path.lexists(stale):
                os.remove(stale)

        def save(stream):
            stream.write(canonical_json_reference(resolved) + b"\n")
            stream.flush()
            os.fsync(stream.fileno())

        # episodes.jsonl first: campaign.json never exists without it.
        self._episodes = append_file(episodes)  # open for the whole run; write errors name the file
        write_atomically(self.file(CAMPAIGN_FILE), save)
        _fsync_dir(self.path)

    def append(self, row):
        """One row, complete on disk before this returns (flushed and fsync'ed)."""
        self._episodes.write(canonical_json_reference(row) + b"\n")
        self._episodes.flush()
        os.fsync(self._episodes.fileno())


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
