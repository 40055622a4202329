"""The one schema of a results directory (campaign.md §4, ranking.md §1).

``CampaignJson`` checks a parsed ``campaign.json``; ``check_row`` checks one
parsed line of ``episodes.jsonl`` against it and returns a ``Row``;
``CountingTable`` takes the rows in file order and keeps where each (policy,
episode key)'s counting row is; ``OkRows`` keeps the ok rows' values.  Every reader of a results directory (the
store's resume, export, ranking, statistics, report, verify) goes through
these, so every command accepts and refuses exactly the same files.

A check that fails raises ``Invalid`` with the reason (a JSON path, what
was expected, what was found); the reader adds the file and line and
raises ``ResultsError``.  No value is converted or trusted before it is
checked: ``1``, ``1.0`` and ``true`` are three different things.
"""

import array
import bisect
import json
import math
import re
from collections.abc import Mapping
from fractions import Fraction

from ..versions import METRICS_VERSION, RANKING_VERSION

POLICY_KINDS = ("builtin", "agent", "python", "records")
#: The keys of a row, in code point order (campaign.md §4).
ROW_KEYS = (
    "elapsed_s", "error", "metrics", "policy", "record", "record_sha256",
    "scenario_hash", "scenario_id", "seed", "status", "steps",
)  # fmt: skip
#: campaign.json's versions, in the order they are checked.
VERSION_KEYS = ("metrics", "ranking", "simulator", "observation", "package")
#: The versions this package reads rows of: rows measured or ranked otherwise mean something else.
READ_VERSIONS = {"metrics": METRICS_VERSION, "ranking": RANKING_VERSION}
#: Integers read from rows and campaign.json stay below this (as seeds do), so
#: that every sum converts to a finite float.
MAX_INTEGER = 2**63
#: campaign.json is read whole, at most this many bytes (docs/campaigns.md).
MAX_CAMPAIGN_BYTES = 64 * 1024 * 1024
#: One line of episodes.jsonl, its newline included, at most this many bytes (docs/campaigns.md).
MAX_LINE_BYTES = 64 * 1024 * 1024
_DISTANCE_KEY = re.compile(r"[1-9][0-9]*")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_SCENARIO_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SHOWN_CHARS = 100


class Invalid(Exception):  # noqa: N818 (a signal inside the reader, never raised out of it)
    """A reason found while checking a value; the reader adds the file and line (``ResultsError``)."""


# --- strict JSON (simulator.md §1) ---------------------------------------------------


def _object_without_duplicates(pairs):
    result = dict(pairs)  # at C speed; the slow search only when a key repeated
    if len(result) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:_SHOWN_CHARS]} is out of range")
    return value


def strict_json(data):
    """Parse one JSON text (bytes, UTF-8) strictly: no duplicate keys, NaN or infinities.

    Raises ``ValueError`` with the parser's reason.
    """
    try:
        text = data.decode("utf-8")
        return json.loads(
            text,
            object_pairs_hook=_object_without_duplicates,
            parse_constant=_no_constants,
            parse_float=_finite_float,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def shown(value):
    """A short JSON rendering of ``value`` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


# --- value checks: each returns the value or raises Invalid ----------------------------


def _expect(fits, value, path, expected):
    """``value`` when it ``fits``, else the reason: ``path``, what was ``expected``, what it got."""
    if not fits:
        raise Invalid(f"{path}: expected {expected}, got {shown(value)}")
    return value


def _integer(value, path, minimum=0):
    fits = type(value) is int and minimum <= value < MAX_INTEGER
    return _expect(fits, value, path, f"an integer {minimum} <= n < 2^63")


def _string(value, path):
    return _expect(type(value) is str, value, path, "a string")


def _identifier(value, path):
    """An ID of simulator.md §1 (campaign, scenario and policy names are IDs, campaign.md §1-2)."""
    fits = type(value) is str and _ID.fullmatch(value)
    return _expect(fits, value, path, "an ID ([A-Za-z0-9][A-Za-z0-9._-]{0,63})")


def _object(value, path):
    return _expect(type(value) is dict, value, path, "an object")


def _list(value, path):
    return _expect(type(value) is list and value, value, path, "a non-empty array")


def _member(mapping, key, path):
    if key not in mapping:
        raise Invalid(f"{path}: missing key {key!r}")
    return mapping[key]


def _no_other_keys(mapping, keys, path):
    unknown = sorted(set(mapping) - set(keys))
    if unknown:
        raise Invalid(f"{path}: unknown key {shown(unknown[0])} (expected only {', '.join(keys)})")


def _relative_path(value, path):
    """A record path as a row holds it: relative (to RESULTS_DIR or the campaign folder), non-empty."""
    fits = type(value) is str and value and not value.startswith("/") and "\0" not in value
    return _expect(fits, value, path, "a relative path")


# --- campaign.json ---------------------------------------------------------------------


class EpisodeKeys:
    """K as (scenario_hash, seed) pairs, scenario by scenario in the file's order, without a pair per episode.

    Iterable (the pairs, made as they are asked for), sized, and answers
    ``key in keys``: a command holding a campaign of 10^6 episodes keeps
    its seed arrays, not 10^6 pairs and their set (docs/campaigns.md).
    """

    __slots__ = ("_length", "_scenarios", "members")

    def __init__(self, scenarios):
        self._scenarios = scenarios  # [(scenario_hash, seeds array)]
        self._length = sum(len(seeds) for _, seeds in scenarios)
        self.members = {scenario_hash: SeedMembers(seeds) for scenario_hash, seeds in scenarios}  # hash -> seeds

    def __iter__(self):
        for scenario_hash, seeds in self._scenarios:
            for seed in seeds:
                yield (scenario_hash, seed)

    def __len__(self):
        return self._length

    def __contains__(self, key):
        scenario_hash, seed = key
        members = self.members.get(scenario_hash)
        return members is not None and seed in members


class SeedMembers:
    """One scenario's seeds: ``seed in`` and its position, bisected when they ascend (as evaluate writes them).

    Seeds in another order (a campaign.json written by hand) get a dict.
    """

    __slots__ = ("_places", "seeds")

    def __init__(self, seeds):
        ascending = all(seeds[i - 1] < seeds[i] for i in range(1, len(seeds)))
        self.seeds = seeds
        self._places = None if ascending else {seed: i for i, seed in enumerate(seeds)}

    def position(self, seed):
        """The seed's index in the scenario's seeds, or None."""
        if self._places is not None:
            return self._places.get(seed)
        i = bisect.bisect_left(self.seeds, seed)
        return i if i < len(self.seeds) and self.seeds[i] == seed else None

    def __contains__(self, seed):
        return self.position(seed) is not None


class Place:
    """Where a counting row is: its 1-based ``line``, ``offset`` and ``length`` in episodes.jsonl, and more.

    ``ok`` is its status, ``previous`` the rows for the same policy and key
    before it (all failed: nothing may follow an ok row).
    """

    __slots__ = ("length", "line", "offset", "ok", "previous")

    def __init__(self, ok, line, offset, length, previous):
        self.ok = ok
        self.line = line
        self.offset = offset
        self.length = length
        self.previous = previous


class CountingTable:
    """The counting row of every (policy, episode key) of a ``CampaignJson``: its status, and where it is.

    What every reader needs of a results directory (which episodes have a
    row, which are ok, and where each counting row is, to read it again),
    in about 25 bytes per (policy, episode), however many rows there are
    (docs/campaigns.md).  ``add`` takes each checked ``Row`` in file order
    and refuses a row after an ok row (``Invalid``); ``get`` returns "ok",
    "failed" or None; ``ok`` and ``failed`` count them, ``tally(policy)``
    one policy's.
    """

    _NAMES = (None, "failed", "ok")

    def __init__(self, campaign):
        self._policies = {name: i for i, name in enumerate(campaign.policies)}
        self._members = campaign.keys.members
        self._statuses = {}  # (policy index, scenario_hash) -> bytearray over the seeds
        self._lines = {}  # the same -> array of line numbers
        self._offsets = {}  # the same -> array of byte offsets
        self._lengths = {}  # the same -> array of line lengths (a line is at most MAX_LINE_BYTES)
        self._previous = {}  # (policy, key) -> rows before the counting one, only where there are some
        self.ok = self.failed = 0

    def _place(self, policy, key, create=False):
        """(slot, statuses or None, position or None) of a key; a key of no checked row has no statuses."""
        scenario_hash, seed = key
        members = self._members.get(scenario_hash)
        index = self._policies.get(policy)
        if members is None or index is None:
            return None, None, None
        slot = (index, scenario_hash)
        statuses = self._statuses.get(slot)
        if statuses is None and create:
            size = len(members.seeds)
            statuses = self._statuses[slot] = bytearray(size)
            self._lines[slot] = array.array("Q", bytes(8 * size))
            self._offsets[slot] = array.array("Q", bytes(8 * size))
            self._lengths[slot] = array.array("I", bytes(4 * size))
        return slot, statuses, members.position(seed)

    def get(self, policy, key):
        """ "ok", "failed", or None for a key without a row (or not of this campaign: a resume adds some)."""
        _, statuses, position = self._place(policy, key)
        return None if statuses is None or position is None else self._NAMES[statuses[position]]

    def line(self, policy, key):
        slot, statuses, position = self._place(policy, key)
        return None if statuses is None or position is None or not statuses[position] else self._lines[slot][position]

    def place(self, policy, key):
        """The counting row's ``Place`` for (policy, key), or None when it has no row."""
        slot, statuses, position = self._place(policy, key)
        if statuses is None or position is None or not statuses[position]:
            return None
        return Place(
            statuses[position] == 2,
            self._lines[slot][position],
            self._offsets[slot][position],
            self._lengths[slot][position],
            self._previous.get((policy, key), 0),
        )

    def tally(self, policy):
        """(ok, failed): how many of ``policy``'s episodes have an ok / a failed counting row (0, 0 for another name).

        Counted in the status bytes themselves, never through a list of a
        status per episode (a ranking of 10^6 episodes asks for it).
        """
        index = self._policies.get(policy)
        ok = failed = 0
        if index is None:
            return ok, failed
        for scenario_hash in self._members:  # this policy's slots only: a board asks once per policy
            statuses = self._statuses.get((index, scenario_hash))
            if statuses is not None:
                ok += statuses.count(2)
                failed += statuses.count(1)
        return ok, failed

    def add(self, row):
        """Take the checked ``row`` (its line, offset and length set); set its ``previous``; raises ``Invalid``."""
        slot, statuses, position = self._place(row.policy, row.key, create=True)
        before = statuses[position]
        if before == 2:
            raise Invalid(
                f"a row for policy {shown(row.policy)}, scenario {shown(row.key[0])}, seed {row.key[1]} "
                f"after its ok row on line {self._lines[slot][position]}"
            )
        if before:
            row.previous = self._previous[row.policy, row.key] = self._previous.get((row.policy, row.key), 0) + 1
            self.failed -= 1
        statuses[position] = 2 if row.ok else 1
        self._lines[slot][position] = row.line
        self._offsets[slot][position] = row.offset
        self._lengths[slot][position] = row.length
        self.ok += row.ok
        self.failed += not row.ok


class CampaignJson:
    """A checked ``campaign.json``: its ID, K in order, and P.

    ``keys`` is K as (scenario_hash, seed) pairs, scenario
    by scenario in the file's order (an ``EpisodeKeys``); ``scenarios`` maps a hash to its ID and seeds
    (an ``array('q')`` in the file's order);
    ``sources`` a hash to its ``source`` string; ``policies`` maps a name to
    its kind, in the file's order.  ``value`` is the parsed file itself.
    Raises ``Invalid``.
    """

    def __init__(self, value):
        self.value = value
        _object(value, "$")
        self.name = _identifier(_member(value, "campaign", "$"), "$.campaign")
        self.versions = self._versions(_object(_member(value, "versions", "$"), "$.versions"))
        self.scenarios = {}  # hash -> (scenario_id, seeds)
        self.sources = {}  # hash -> source
        self._scenarios(_list(_member(value, "scenarios", "$"), "$.scenarios"))
        self.keys = EpisodeKeys([(h, seeds) for h, (_, seeds) in self.scenarios.items()])
        self.policies = {}  # name -> kind
        for i, policy in enumerate(_list(_member(value, "policies", "$"), "$.policies")):
            self._policy(policy, f"$.policies[{i}]")
        _no_other_keys(value, ("campaign", "versions", "scenarios", "policies"), "$")

    @staticmethod
    def _versions(versions):
        for part in VERSION_KEYS:
            theirs = _member(versions, part, "$.versions")
            ours = READ_VERSIONS.get(part)
            if ours is not None and theirs != ours:
                raise Invalid(f"$.versions.{part}: this is {part} version {ours}, the campaign has {shown(theirs)}")
            _string(theirs, f"$.versions.{part}")
        _no_other_keys(versions, VERSION_KEYS, "$.versions")
        return versions

    def _scenarios(self, scenarios):
        ids = set()
        for i, scenario in enumerate(scenarios):
            path = f"$.scenarios[{i}]"
            _object(scenario, path)
            scenario_id = _identifier(_member(scenario, "scenario_id", path), f"{path}.scenario_id")
            scenario_hash = _string(_member(scenario, "scenario_hash", path), f"{path}.scenario_hash")
            if scenario_hash in self.scenarios:
                raise Invalid(f"{path}.scenario_hash: repeated scenario hash {shown(scenario_hash)}")
            _expect(_SCENARIO_HASH.fullmatch(scenario_hash), scenario_hash, f"{path}.scenario_hash", "sha256:<64 hex>")
            if scenario_id in ids:
                raise Invalid(f"{path}.scenario_id: repeated scenario ID {shown(scenario_id)}")
            ids.add(scenario_id)
            source = _string(_member(scenario, "source", path), f"{path}.source")
            seeds = _list(_member(scenario, "seeds", path), f"{path}.seeds")
            seen = None  # while the seeds ascend they cannot repeat: a set only once they do not
            for j, seed in enumerate(seeds):
                _integer(seed, f"{path}.seeds[{j}]")
                if seen is None and j and not seeds[j - 1] < seed:
                    seen = set(seeds[:j])
                if seen is not None:
                    if seed in seen:
                        raise Invalid(f"{path}.seeds[{j}]: repeated seed {seed}")
                    seen.add(seed)
            _no_other_keys(scenario, ("scenario_id", "scenario_hash", "source", "seeds"), path)
            # 8 bytes a seed, and no hold on the parsed file's int objects (32 bytes each): what a reader
            # keeps once ``value`` is gone (a resume keeps the counting table) holds no Python int per seed.
            self.scenarios[scenario_hash] = (scenario_id, array.array("q", seeds))
            self.sources[scenario_hash] = source

    def _policy(self, policy, path):
        _object(policy, path)
        name = _identifier(_member(policy, "name", path), f"{path}.name")
        if name in self.policies:
            raise Invalid(f"{path}.name: repeated policy name {shown(name)}")
        kinds = [kind for kind in POLICY_KINDS if kind in policy]
        if len(kinds) != 1:
            raise Invalid(f"{path}: expected exactly one of {', '.join(POLICY_KINDS)}, got {len(kinds)}")
        kind = kinds[0]
        _string(policy[kind], f"{path}.{kind}")
        keys = ("name", kind)
        if kind in ("agent", "python"):
            keys += ("step_timeout",)
            timeout = _member(policy, "step_timeout", path)
            fits = type(timeout) is float and timeout > 0  # finite: strict_json refuses infinities
            _expect(fits, timeout, f"{path}.step_timeout", "a number > 0 written as a float")
            keys += _sandbox_keys(policy, kind, path)
            if "code" in policy:  # campaign.md 1.1; a directory made before 1.1 has none
                code = _string(policy["code"], f"{path}.code")
                _expect(_SCENARIO_HASH.fullmatch(code), code, f"{path}.code", "sha256:<64 hex>")
                keys += ("code",)
        _no_other_keys(policy, keys, path)
        self.policies[name] = kind


def _sandbox_keys(policy, kind, path):
    """The sandbox's keys an agent or python entry holds (isolation.md §2), their types checked."""
    found = ()
    for key in ("memory_mb", "max_processes", "tmp_mb"):
        if key in policy:
            value = policy[key]
            _expect(type(value) is int and value >= 1, value, f"{path}.{key}", "an integer >= 1")
            found += (key,)
    if "episode_timeout" in policy:
        value = policy["episode_timeout"]
        _expect(type(value) is float and value > 0, value, f"{path}.episode_timeout", "a number > 0 written as a float")
        found += ("episode_timeout",)
    if "env" in policy:
        value = policy["env"]
        fits = isinstance(value, dict) and all(isinstance(text, str) for text in value.values())
        _expect(fits, value, f"{path}.env", "an object of strings")
        found += ("env",)
    if "files" in policy and kind == "agent":
        value = policy["files"]
        fits = isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)
        _expect(fits, value, f"{path}.files", "a non-empty array of strings")
        found += ("files",)
    return found


# --- episodes.jsonl --------------------------------------------------------------------


def exposure_of(histogram):
    """Σ count / d for a {d: count} histogram as an exact ``Fraction`` (ranking.md §2's x).

    Summed in integers over one common denominator, the least common
    multiple of the distances so far, and reduced once at the end: no
    ``Fraction`` per term, whose construction and reduction dominated the
    ranking of a board of a thousand policies.
    """
    numerator, denominator = 0, 1
    for d, count in histogram.items():
        if count:
            common = math.gcd(denominator, d)
            scale = d // common
            numerator = numerator * scale + count * (denominator // common)
            denominator *= scale
    return Fraction(numerator, denominator)


class Histogram(Mapping):
    """A checked {d: count} distance histogram, read only, in two arrays of 64-bit integers (distances ascending).

    About 16 bytes an entry where a dict of Python ints takes about 45:
    what ranking, statistics and the report keep of every ok row.
    """

    __slots__ = ("_counts", "_distances")

    def __init__(self, histogram):
        ordered = sorted(histogram.items())
        self._distances = array.array("q", [d for d, _ in ordered])
        self._counts = array.array("q", [count for _, count in ordered])

    def __getitem__(self, distance):
        i = bisect.bisect_left(self._distances, distance)
        if i < len(self._distances) and self._distances[i] == distance:
            return self._counts[i]
        raise KeyError(distance)

    def __iter__(self):
        return iter(self._distances)

    def __len__(self):
        return len(self._distances)

    def items(self):
        """(d, count) pairs, distances ascending."""
        return zip(self._distances, self._counts, strict=True)


class EpisodeOutcome:
    """The values ranking and statistics read from one ok row (ranking.md §1-2), checked."""

    __slots__ = ("casualties", "evacuated", "histogram", "population", "stranded", "time_to_safety")

    def __init__(self, metrics):
        safety = _object(_member(metrics, "safety", "$.metrics"), "$.metrics.safety")
        time = _object(_member(metrics, "time", "$.metrics"), "$.metrics.time")
        fire = _object(_member(metrics, "fire_exposure", "$.metrics"), "$.metrics.fire_exposure")
        read = {}
        for field in ("population", "evacuated", "casualties", "stranded"):
            read[field] = _integer(_member(safety, field, "$.metrics.safety"), f"$.metrics.safety.{field}")
        self.population = _integer(read["population"], "$.metrics.safety.population", minimum=1)
        self.evacuated = read["evacuated"]
        self.casualties = read["casualties"]
        self.stranded = read["stranded"]
        if self.evacuated + self.casualties + self.stranded != self.population:
            # metrics.md §4's invariant; without it a rate could exceed 1.
            raise Invalid(
                f"$.metrics.safety: evacuated + casualties + stranded must equal population, got "
                f"{self.evacuated} + {self.casualties} + {self.stranded} != {self.population}"
            )
        self.time_to_safety = _integer(
            _member(time, "person_time_to_safety_total", "$.metrics.time"), "$.metrics.time.person_time_to_safety_total"
        )
        path = "$.metrics.fire_exposure.distance_histogram"
        histogram = _object(_member(fire, "distance_histogram", "$.metrics.fire_exposure"), path)
        checked = {}
        for key, count in histogram.items():
            if not _DISTANCE_KEY.fullmatch(key):
                raise Invalid(f"{path}: key {shown(key)} is not a distance d >= 1 in decimal without leading zeros")
            if len(key) > 19 or int(key) >= MAX_INTEGER:
                raise Invalid(f"{path}: distance {shown(key)} is out of range (d < 2^63)")
            checked[int(key)] = _integer(count, f"{path}.{key}")
        self.histogram = Histogram(checked)

    def exposure(self):
        """x: Σ count / d over the histogram, exact."""
        return exposure_of(self.histogram)

    def counts_key(self):
        """(c, s, p): the order key without x, which is costlier and needed only to break a tie."""
        return (self.casualties, self.stranded, self.time_to_safety)


class Row:
    """One checked line of ``episodes.jsonl``: what readers need of it, not the whole row.

    ``value`` (the parsed line) and ``metrics`` (the whole metrics dict of
    an ok row) are there while the reader's consumers see the row, then
    dropped (None); ``episode`` is an ok row's checked ``EpisodeOutcome`` values.
    ``offset`` and ``length`` locate the line in the file (its newline
    excluded), so that a row can be read again.
    """

    __slots__ = (
        "episode", "key", "length", "line", "metrics", "offset", "ok", "policy", "previous", "record",
        "record_sha256", "scenario_id", "value",
    )  # fmt: skip

    def __init__(self, value, policy, key, scenario_id, ok, metrics, episode, record, record_sha256):
        self.value = value
        self.line = 0
        self.offset = self.length = 0
        self.previous = 0  # rows for the same policy and key before this one
        self.policy = policy
        self.key = key
        self.scenario_id = scenario_id
        self.ok = ok
        self.metrics = metrics
        self.episode = episode
        self.record = record
        self.record_sha256 = record_sha256


def _check_keys(row):
    missing = sorted(set(ROW_KEYS) - row.keys())
    unknown = sorted(row.keys() - set(ROW_KEYS))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown {', '.join(shown(k) for k in unknown)}"] if unknown else []
        raise Invalid(f"$: a row has exactly the keys {', '.join(ROW_KEYS)}; {'; '.join(parts)}")


def _check_outcome(row, ok):
    """status, error, metrics and steps agree with each other (campaign.md §4)."""
    if ok:
        if row["error"] is not None:
            raise Invalid(f"$.error: expected null on an ok row, got {shown(row['error'])}")
        _object(row["metrics"], "$.metrics")
        if type(row["steps"]) is not int or row["steps"] < 0:
            raise Invalid(f"$.steps: expected an integer >= 0 on an ok row, got {shown(row['steps'])}")
    else:
        _string(row["error"], "$.error")
        for key in ("metrics", "steps"):
            if row[key] is not None:
                raise Invalid(f"$.{key}: expected null on a failed row, got {shown(row[key])}")


def _check_record(row):
    if row["record"] is None:
        if row["record_sha256"] is not None:
            raise Invalid(f"$.record_sha256: expected null when record is null, got {shown(row['record_sha256'])}")
        return
    _relative_path(row["record"], "$.record")
    if type(row["record_sha256"]) is not str or not _SHA256_HEX.fullmatch(row["record_sha256"]):
        raise Invalid(f"$.record_sha256: expected 64 lowercase hex digits, got {shown(row['record_sha256'])}")


def _check_episode(row, campaign):
    """The row's policy and episode are the campaign's; returns (policy, key, scenario_id)."""
    policy, scenario_id, scenario_hash, seed = row["policy"], row["scenario_id"], row["scenario_hash"], row["seed"]
    if policy not in campaign.policies:
        raise Invalid(f"$.policy: {shown(policy)} is not a policy of the campaign")
    key = (scenario_hash, seed)
    if key not in campaign.keys:
        raise Invalid(f"$: scenario {shown(scenario_hash)} with seed {seed} is not an episode of the campaign")
    expected_id = campaign.scenarios[scenario_hash][0]
    if scenario_id != expected_id:
        raise Invalid(
            f"$.scenario_id: the campaign names this scenario hash {shown(expected_id)}, got {shown(scenario_id)}"
        )
    return policy, key, scenario_id


def _check_metrics(row, metrics):
    """An ok row's metrics are of its own episode and steps (output.md's to_dict(), ranking.md §1)."""
    for field, expected in (("scenario_hash", row["scenario_hash"]), ("seed", row["seed"])):
        found = _member(metrics, field, "$.metrics")
        if found != expected or type(found) is not type(expected):
            raise Invalid(f"$.metrics.{field}: expected the row's {shown(expected)}, got {shown(found)}")
    episode = EpisodeOutcome(metrics)
    for field, expected in (("scenario_id", row["scenario_id"]), ("metrics_version", METRICS_VERSION)):
        found = _member(metrics, field, "$.metrics")
        if found != expected or type(found) is not str:
            whose = "the row's" if field == "scenario_id" else "metrics version"
            raise Invalid(f"$.metrics.{field}: expected {whose} {shown(expected)}, got {shown(found)}")
    steps = _member(metrics["time"], "episode_steps", "$.metrics.time")
    if steps != row["steps"] or type(steps) is not int:
        raise Invalid(f"$.metrics.time.episode_steps: expected the row's steps {row['steps']}, got {shown(steps)}")
    return episode


def check_row(value, campaign):
    """The checks of campaign.md §4 and ranking.md §1 on one parsed line, bar the order of rows.

    ``campaign`` is a ``CampaignJson``.  Returns a ``Row`` (line 0, the parsed
    row kept); raises ``Invalid``.
    """
    row = _object(value, "$")
    _check_keys(row)
    _string(row["scenario_id"], "$.scenario_id")
    _string(row["scenario_hash"], "$.scenario_hash")
    if type(row["seed"]) is not int:
        raise Invalid(f"$.seed: expected an integer, got {shown(row['seed'])}")
    _string(row["policy"], "$.policy")
    status = row["status"]
    if type(status) is not str or status not in ("ok", "failed"):
        raise Invalid(f'$.status: expected "ok" or "failed", got {shown(status)}')
    ok = status == "ok"
    _check_outcome(row, ok)
    _check_record(row)
    elapsed = row["elapsed_s"]
    if type(elapsed) not in (int, float) or not elapsed >= 0:
        raise Invalid(f"$.elapsed_s: expected a number >= 0, got {shown(elapsed)}")
    policy, key, scenario_id = _check_episode(row, campaign)
    metrics = row["metrics"] if ok else None
    episode = _check_metrics(row, metrics) if ok else None
    return Row(row, policy, key, scenario_id, ok, metrics, episode, row["record"], row["record_sha256"])


class RowRules:
    """Further input rules a reader may add to the schema (statistics.md §1 has some).

    Subclass and override; each method returns None when the value passes,
    else the reason (a JSON path first, then expected and actual values),
    which the reader reports as a ``ResultsError`` naming the file and line.
    ``campaign`` is the checked ``CampaignJson``; ``row`` a checked ``Row``
    (its ``line`` set), ``value`` the parsed line.
    """

    def check_campaign(self, campaign):
        return None

    def check_row(self, row, value):
        return None


class StatisticsRules(RowRules):
    """statistics.md §1's input errors beyond ranking.md §1 (they cannot occur in what evaluate wrote).

    Seeds strictly ascending in ``campaign.json``; every ok row of one
    scenario hash with the same ``safety.population``.  (No episode key,
    two scenarios with one ID and a population of 0 are refused by the
    schema itself.)  One instance per read: it remembers populations.
    """

    def __init__(self):
        self.populations = {}  # scenario_hash -> (population, line)

    def check_campaign(self, campaign):
        for i, scenario in enumerate(campaign.value["scenarios"]):
            seeds = scenario["seeds"]
            for j in range(1, len(seeds)):
                if seeds[j] <= seeds[j - 1]:
                    return (
                        f"$.scenarios[{i}].seeds[{j}]: expected seeds in strictly ascending order, "
                        f"got {seeds[j]} after {seeds[j - 1]}"
                    )
        return None

    def check_row(self, row, value):
        if not row.ok:
            return None
        first = self.populations.setdefault(row.key[0], (row.episode.population, row.line))
        if first[0] != row.episode.population:
            return (
                f"$.metrics.safety.population: expected {first[0]}, the population of this scenario's ok row "
                f"on line {first[1]}, got {row.episode.population}"
            )
        return None


class OkRows:
    """A reader's consumer (``read_results(consumers=...)``): the ok rows' ``Row`` (their parsed line is dropped).

    What ranking and statistics read (``Row.episode``) and what ``verify``
    checks (``Row.record``), keyed by (policy, episode key): an ok row is
    always a counting row, nothing may follow it.  ``rows()`` lists them in
    file order.
    """

    def __init__(self):
        self.by_key = {}  # (policy, (scenario_hash, seed)) -> Row

    def add(self, row):
        if row.ok:
            self.by_key[row.policy, row.key] = row

    def __getitem__(self, slot):
        return self.by_key[slot]

    def rows(self):
        """The ok rows, in file order."""
        return sorted(self.by_key.values(), key=lambda row: row.line)
