"""Ranking version 1.0 (ranking.md): a results directory's rows -> ``ranking.json``.

A pure function of ``campaign.json`` (parsed) and the bytes of
``episodes.jsonl``: no files, no clock, no environment.  Every total is an
exact integer or ``Fraction``; each printed float is the correctly rounded
float of its exact rational, converted once, at the end.

Safety comes first (metrics.md §11): policies are ordered by the tuple
(casualties, stranded, person-time to safety, exposure), compared
lexicographically, so no amount of speed makes up for one more casualty.
"""

import hashlib
import itertools
import json
import math
import re
from collections import Counter
from fractions import Fraction

from .canonical import canonical_json_reference
from .errors import MissingExtraError, RankingInputError
from .versions import METRICS_VERSION, RANKING_VERSION

CAMPAIGN_FILE = "campaign.json"
EPISODES_FILE = "episodes.jsonl"
FORMULA = (
    "sort ascending by (casualties, stranded, person_time_to_safety_total, exposure), "
    "each summed over the campaign's episodes; equal tuples share a rank"
)
POLICY_KINDS = ("builtin", "agent", "python", "records")
ROW_KEYS = (
    "elapsed_s", "error", "metrics", "policy", "record", "record_sha256",
    "scenario_hash", "scenario_id", "seed", "status", "steps",
)  # fmt: skip
#: Integers read from rows and campaign.json stay below this (as seeds do), so
#: that every sum converts to a finite float.
MAX_INTEGER = 2**63
_DISTANCE_KEY = re.compile(r"[1-9][0-9]*")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SHOWN_CHARS = 100


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


def _shown(value):
    """A short JSON rendering of ``value`` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


class _Invalid(Exception):
    """A reason found while checking a value; the caller adds the file and line."""


def _expect(fits, value, path, expected):
    """``value`` when it ``fits``, else the reason: ``path``, what was ``expected``, what it got."""
    if not fits:
        raise _Invalid(f"{path}: expected {expected}, got {_shown(value)}")
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
        raise _Invalid(f"{path}: missing key {key!r}")
    return mapping[key]


# --- campaign.json ---------------------------------------------------------------------


class Campaign:
    """What ranking needs from ``campaign.json``: its ID, K in order, and P.

    ``keys`` is K as (scenario_hash, seed) pairs, scenario by scenario in the
    file's order; ``scenarios`` maps a hash to its ID and seeds; ``policies``
    maps a name to its kind, in the file's order.
    """

    def __init__(self, campaign):
        try:
            self._read(campaign)
        except _Invalid as exc:
            raise RankingInputError(CAMPAIGN_FILE, None, str(exc)) from None

    def _read(self, campaign):
        _object(campaign, "$")
        self.name = _identifier(_member(campaign, "campaign", "$"), "$.campaign")
        versions = _object(_member(campaign, "versions", "$"), "$.versions")
        for part, ours in (("metrics", METRICS_VERSION), ("ranking", RANKING_VERSION)):
            theirs = _member(versions, part, "$.versions")
            if theirs != ours:
                raise _Invalid(f"$.versions.{part}: this is {part} version {ours}, the campaign has {_shown(theirs)}")
        self.scenarios = {}  # hash -> (scenario_id, seeds)
        ids = set()
        self.keys = []
        for i, scenario in enumerate(_list(_member(campaign, "scenarios", "$"), "$.scenarios")):
            path = f"$.scenarios[{i}]"
            _object(scenario, path)
            scenario_id = _identifier(_member(scenario, "scenario_id", path), f"{path}.scenario_id")
            scenario_hash = _string(_member(scenario, "scenario_hash", path), f"{path}.scenario_hash")
            if scenario_hash in self.scenarios:
                raise _Invalid(f"{path}.scenario_hash: repeated scenario hash {_shown(scenario_hash)}")
            if scenario_id in ids:
                raise _Invalid(f"{path}.scenario_id: repeated scenario ID {_shown(scenario_id)}")
            ids.add(scenario_id)
            seeds = {}  # dict: ordered, fast membership
            for j, seed in enumerate(_list(_member(scenario, "seeds", path), f"{path}.seeds")):
                _integer(seed, f"{path}.seeds[{j}]")
                if seed in seeds:
                    raise _Invalid(f"{path}.seeds[{j}]: repeated seed {seed}")
                seeds[seed] = None
                self.keys.append((scenario_hash, seed))
            self.scenarios[scenario_hash] = (scenario_id, tuple(seeds))
        self.key_set = frozenset(self.keys)
        self.policies = {}
        for i, policy in enumerate(_list(_member(campaign, "policies", "$"), "$.policies")):
            path = f"$.policies[{i}]"
            _object(policy, path)
            name = _identifier(_member(policy, "name", path), f"{path}.name")
            if name in self.policies:
                raise _Invalid(f"{path}.name: repeated policy name {_shown(name)}")
            kinds = [kind for kind in POLICY_KINDS if kind in policy]
            if len(kinds) != 1:
                raise _Invalid(f"{path}: expected exactly one of {', '.join(POLICY_KINDS)}, got {len(kinds)}")
            self.policies[name] = kinds[0]


def read_campaign(data):
    """Parse the bytes of ``campaign.json`` strictly; raises ``RankingInputError``."""
    try:
        return strict_json(data)
    except ValueError as exc:
        raise RankingInputError(CAMPAIGN_FILE, None, f"not a JSON text: {exc}") from None


# --- episodes.jsonl --------------------------------------------------------------------


class Episode:
    """The values ranking reads from one ok row (ranking.md §2)."""

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
            raise _Invalid(
                f"$.metrics.safety: evacuated + casualties + stranded must equal population, got "
                f"{self.evacuated} + {self.casualties} + {self.stranded} != {self.population}"
            )
        self.time_to_safety = _integer(
            _member(time, "person_time_to_safety_total", "$.metrics.time"), "$.metrics.time.person_time_to_safety_total"
        )
        path = "$.metrics.fire_exposure.distance_histogram"
        histogram = _object(_member(fire, "distance_histogram", "$.metrics.fire_exposure"), path)
        self.histogram = {}
        for key, count in histogram.items():
            if not _DISTANCE_KEY.fullmatch(key):
                raise _Invalid(f"{path}: key {_shown(key)} is not a distance d >= 1 in decimal without leading zeros")
            if len(key) > 19 or int(key) >= MAX_INTEGER:
                raise _Invalid(f"{path}: distance {_shown(key)} is out of range (d < 2^63)")
            self.histogram[int(key)] = _integer(count, f"{path}.{key}")

    def exposure(self):
        """x: Σ count / d over the histogram, exact."""
        return exposure_of(self.histogram)

    def counts_key(self):
        """(c, s, p): the order key without x, which is costlier and needed only to break a tie."""
        return (self.casualties, self.stranded, self.time_to_safety)


def exposure_of(histogram):
    """Σ count / d for a {d: count} histogram as an exact ``Fraction``.

    Summed pairwise, smallest distances first, so that denominators grow
    evenly (a left-to-right sum of thousands of terms is much slower).
    """
    terms = [Fraction(count, d) for d, count in sorted(histogram.items()) if count]
    while len(terms) > 1:
        terms = [sum(terms[i : i + 2], Fraction(0)) for i in range(0, len(terms), 2)]
    return terms[0] if terms else Fraction(0)


class Row:
    """One checked line of ``episodes.jsonl``."""

    __slots__ = ("episode", "key", "line", "metrics", "ok", "policy", "previous")

    def __init__(self, line, policy, key, ok, metrics, episode):
        self.line = line
        self.previous = 0  # rows for the same policy and key before this one
        self.policy = policy
        self.key = key
        self.ok = ok
        self.metrics = metrics  # the whole metrics dict of an ok row, else None
        self.episode = episode  # its Episode values, else None


def _check_row(value, campaign):
    """The checks of ranking.md §1 on one parsed line, bar the order of rows; returns a ``Row`` (line 0)."""
    row = _object(value, "$")
    missing = sorted(set(ROW_KEYS) - row.keys())
    unknown = sorted(row.keys() - set(ROW_KEYS))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown {', '.join(_shown(k) for k in unknown)}"] if unknown else []
        raise _Invalid(f"$: a row has exactly the keys {', '.join(ROW_KEYS)}; {'; '.join(parts)}")
    scenario_id = _string(row["scenario_id"], "$.scenario_id")
    scenario_hash = _string(row["scenario_hash"], "$.scenario_hash")
    seed = row["seed"]
    if type(seed) is not int:
        raise _Invalid(f"$.seed: expected an integer, got {_shown(seed)}")
    policy = _string(row["policy"], "$.policy")
    status = row["status"]
    if status not in ("ok", "failed") or type(status) is not str:
        raise _Invalid(f'$.status: expected "ok" or "failed", got {_shown(status)}')
    ok = status == "ok"
    if ok:
        if row["error"] is not None:
            raise _Invalid(f"$.error: expected null on an ok row, got {_shown(row['error'])}")
        metrics = _object(row["metrics"], "$.metrics")
        if type(row["steps"]) is not int or row["steps"] < 0:
            raise _Invalid(f"$.steps: expected an integer >= 0 on an ok row, got {_shown(row['steps'])}")
    else:
        _string(row["error"], "$.error")
        for key in ("metrics", "steps"):
            if row[key] is not None:
                raise _Invalid(f"$.{key}: expected null on a failed row, got {_shown(row[key])}")
        metrics = None
    if row["record"] is None:
        if row["record_sha256"] is not None:
            raise _Invalid(f"$.record_sha256: expected null when record is null, got {_shown(row['record_sha256'])}")
    else:
        _string(row["record"], "$.record")
        if type(row["record_sha256"]) is not str or not _SHA256_HEX.fullmatch(row["record_sha256"]):
            raise _Invalid(f"$.record_sha256: expected 64 lowercase hex digits, got {_shown(row['record_sha256'])}")
    elapsed = row["elapsed_s"]
    if type(elapsed) not in (int, float) or not elapsed >= 0:
        raise _Invalid(f"$.elapsed_s: expected a number >= 0, got {_shown(elapsed)}")
    if policy not in campaign.policies:
        raise _Invalid(f"$.policy: {_shown(policy)} is not a policy of the campaign")
    key = (scenario_hash, seed)
    if key not in campaign.key_set:
        raise _Invalid(f"$: scenario {_shown(scenario_hash)} with seed {seed} is not an episode of the campaign")
    expected_id = campaign.scenarios[scenario_hash][0]
    if scenario_id != expected_id:
        raise _Invalid(
            f"$.scenario_id: the campaign names this scenario hash {_shown(expected_id)}, got {_shown(scenario_id)}"
        )
    episode = None
    if ok:
        for field, expected in (("scenario_hash", scenario_hash), ("seed", seed)):
            found = _member(metrics, field, "$.metrics")
            if found != expected or type(found) is not type(expected):
                raise _Invalid(f"$.metrics.{field}: expected the row's {_shown(expected)}, got {_shown(found)}")
        episode = Episode(metrics)
    return Row(0, policy, key, ok, metrics, episode)


def counting_rows(campaign, episodes, keep_metrics=False):
    """Check every complete line of ``episodes.jsonl``; returns ({(policy, key): counting Row}, warnings).

    ``campaign`` is a ``Campaign``.  Lines are split on ``\\n`` only; bytes
    after the last newline (a torn line) are ignored with a warning.  Raises
    ``RankingInputError`` naming the first bad line.  A row's whole metrics
    dict is kept only with ``keep_metrics`` (the report draws from it).
    """
    end = episodes.rfind(b"\n") + 1
    warnings = []
    if end < len(episodes):
        torn_line = episodes.count(b"\n", 0, end) + 1
        warnings.append(
            f"{EPISODES_FILE}:{torn_line}: ignored {len(episodes) - end} bytes after the last newline (a torn line)"
        )
    counting = {}  # (policy, key) -> its last Row so far
    start = 0
    line = 0
    while start < end:
        stop = episodes.index(b"\n", start)
        line += 1
        try:
            try:
                value = strict_json(episodes[start:stop])
            except ValueError as exc:
                raise _Invalid(f"not a JSON text: {exc}") from None
            row = _check_row(value, campaign)
        except _Invalid as exc:
            raise RankingInputError(EPISODES_FILE, line, str(exc)) from None
        slot = (row.policy, row.key)
        before = counting.get(slot)
        if before is not None:
            if before.ok:
                raise RankingInputError(
                    EPISODES_FILE,
                    line,
                    f"a row for policy {_shown(row.policy)}, scenario {_shown(row.key[0])}, seed {row.key[1]} "
                    f"after its ok row on line {before.line}",
                )
            row.previous = before.previous + 1
        row.line = line
        if not keep_metrics:
            row.metrics = None
        counting[slot] = row
        start = stop + 1
    return counting, warnings


# --- the ranking -----------------------------------------------------------------------


def _float(value):
    """The correctly rounded float of an exact rational (int / Fraction)."""
    return float(Fraction(value))


class _Totals:
    """Sums of an ok policy's episode values over some episodes (all of K, or one scenario)."""

    def __init__(self):
        self.episodes = 0
        self.population = 0
        self.evacuated = 0
        self.casualties = 0
        self.stranded = 0
        self.time_to_safety = 0
        self.histogram = Counter()

    def add(self, episode):
        self.episodes += 1
        self.population += episode.population
        self.evacuated += episode.evacuated
        self.casualties += episode.casualties
        self.stranded += episode.stranded
        self.time_to_safety += episode.time_to_safety
        self.histogram.update(episode.histogram)

    def exposure(self):
        return exposure_of(self.histogram)


def _ranked_entry(name, kind, counting, campaign):
    """The ``ranked`` entry of a policy whose counting rows are all ok (rank added later), and its order key."""
    total = _Totals()
    by_scenario = {}
    failed_before_ok = 0
    for scenario_hash, (scenario_id, seeds) in campaign.scenarios.items():
        part = _Totals()
        for seed in seeds:
            row = counting[name, (scenario_hash, seed)]
            if row.previous:  # earlier rows exist, all failed (nothing follows an ok row)
                failed_before_ok += 1
            part.add(row.episode)
            total.add(row.episode)
        by_scenario[scenario_id] = {
            "episodes": part.episodes,
            "population": part.population,
            "evacuated": part.evacuated,
            "casualties": part.casualties,
            "stranded": part.stranded,
            "person_time_to_safety_total": part.time_to_safety,
            "exposure": _float(part.exposure()),
        }
    exposure = total.exposure()
    entry = {
        "policy": name,
        "kind": kind,
        "casualties": total.casualties,
        "stranded": total.stranded,
        "person_time_to_safety_total": total.time_to_safety,
        "exposure": _float(exposure),
        "population": total.population,
        "evacuated": total.evacuated,
        "casualty_rate": _float(Fraction(total.casualties, total.population)),
        "stranded_rate": _float(Fraction(total.stranded, total.population)),
        "evacuated_rate": _float(Fraction(total.evacuated, total.population)),
        "mean_person_time_to_safety": _float(Fraction(total.time_to_safety, total.population)),
        "failed_before_ok": failed_before_ok,
        "by_scenario": by_scenario,
    }
    return (total.casualties, total.stranded, total.time_to_safety, exposure), entry


def _pair(above, below, counting, campaign):
    """ranking.md §4: how often, episode by episode, ``above`` is better, worse or equal."""
    tally = {"above_better": 0, "below_better": 0, "equal": 0}
    for key in campaign.keys:
        mine, theirs = counting[above, key].episode, counting[below, key].episode
        first, second = mine.counts_key(), theirs.counts_key()
        if first == second:  # the exact exposure only when it decides
            first, second = mine.exposure(), theirs.exposure()
        tally["above_better" if first < second else "below_better" if first > second else "equal"] += 1
    return {"above": above, "below": below, **tally}


def compute_ranking(campaign, episodes):
    """Ranking 1.0 of a results directory: returns (``ranking.json``'s dict, warnings).

    ``campaign`` is the parsed ``campaign.json``; ``episodes`` the raw bytes
    of ``episodes.jsonl``.  Raises ``RankingInputError`` (naming the file and,
    for ``episodes.jsonl``, the 1-based line) on input ranking.md §1 refuses.
    Warnings (a torn last line) are returned, not printed.
    """
    resolved = Campaign(campaign)
    counting, warnings = counting_rows(resolved, episodes)
    return ranking_from_rows(resolved, counting, episodes), warnings


def ranking_from_rows(resolved, counting, episodes):
    """``ranking.json``'s dict from a ``Campaign``, its counting rows (``counting_rows``) and the episodes' bytes.

    The part of ``compute_ranking`` after the rows are checked: statistics
    (statistics.md §1) builds on exactly this ranking of the same rows.
    """
    scored, unranked = [], []
    for name in sorted(resolved.policies):
        kind = resolved.policies[name]
        statuses = [counting[name, key].ok if (name, key) in counting else None for key in resolved.keys]
        if all(statuses):
            scored.append(_ranked_entry(name, kind, counting, resolved))
        else:
            ok, failed = statuses.count(True), statuses.count(False)
            missing = len(statuses) - ok - failed
            unranked.append({"policy": name, "kind": kind, "ok": ok, "failed": failed, "missing": missing})
    # Code-point order of names within a tuple: the sort is stable and ``scored`` is in name order.
    scored.sort(key=lambda pair: pair[0])
    ranked = []
    for position, (order, entry) in enumerate(scored):
        tied = position and order == scored[position - 1][0]
        ranked.append({"rank": ranked[-1]["rank"] if tied else position + 1, **entry})
    pairs = [_pair(above["policy"], below["policy"], counting, resolved) for above, below in itertools.pairwise(ranked)]
    end = episodes.rfind(b"\n") + 1
    ranking = {
        "ranking_version": RANKING_VERSION,
        "metrics_version": METRICS_VERSION,
        "campaign": resolved.name,
        "formula": FORMULA,
        "episodes": len(resolved.keys),
        "source": {"file": EPISODES_FILE, "sha256": hashlib.sha256(episodes[:end]).hexdigest()},
        "ranked": ranked,
        "pairs": pairs,
        "unranked": unranked,
    }
    return ranking


def ranking_bytes(ranking):
    """``ranking.json``'s bytes: canonical JSON (simulator.md §1) and one newline.

    The reference encoder, not orjson: orjson writes floats differently
    (``5e-5`` for ``json.dumps``'s ``5e-05``), and ranking.md fixes the latter.
    """
    return canonical_json_reference(ranking) + b"\n"


# --- leaderboard text ------------------------------------------------------------------

LEADERBOARD_FORMATS = ("table", "markdown")
_TABLE_STYLES = {"table": "simple", "markdown": "pipe"}
LEADERBOARD_COLUMNS = (
    "rank", "policy", "casualties", "stranded", "evacuated", "time to safety", "exposure",
)  # fmt: skip


def require_tabulate():
    """tabulate's function, or ``MissingExtraError`` naming the ``cli`` extra (text tables need it)."""
    try:
        from tabulate import tabulate
    except ImportError:
        raise MissingExtraError(
            "tables need tabulate: pip install 'ember-eval[cli]' (or pip install tabulate); --format json needs nothing"
        ) from None
    return tabulate


def leaderboard_rows(ranking):
    """The leaderboard's cells, one list per ranked policy (strings and integers)."""
    return [
        [
            entry["rank"],
            entry["policy"],
            entry["casualties"],
            entry["stranded"],
            f"{entry['evacuated']} of {entry['population']}",
            f"{entry['person_time_to_safety_total']} (mean {entry['mean_person_time_to_safety']:.2f})",
            f"{entry['exposure']:.4f}",
        ]
        for entry in ranking["ranked"]
    ]


def unranked_reason(entry):
    """Why a policy is not ranked, in words (ranking.md §1)."""
    parts = [f"{entry[key]} {key}" for key in ("ok", "failed", "missing") if entry[key]]
    return f"not comparable on this campaign: {', '.join(parts)} of its episodes"


def format_leaderboard(ranking, fmt):
    """A ``ranking.json`` dict as a plain-text (``"table"``) or Markdown (``"markdown"``) leaderboard.

    Tables need the ``cli`` extra (tabulate); without it a ``MissingExtraError``
    says so.
    """
    if fmt not in _TABLE_STYLES:
        raise ValueError(f"format must be one of {', '.join(LEADERBOARD_FORMATS)}, got {fmt!r}")
    tabulate = require_tabulate()
    style = _TABLE_STYLES[fmt]
    markdown = fmt == "markdown"
    title = (
        f"Campaign {ranking['campaign']}: ranking {ranking['ranking_version']} over {ranking['episodes']} episodes "
        f"(metrics {ranking['metrics_version']})"
    )
    formula = f"Order: {ranking['formula']}."
    lines = [f"**{title}**" if markdown else title, "", formula, ""]
    if ranking["ranked"]:
        table = tabulate(
            leaderboard_rows(ranking),
            headers=LEADERBOARD_COLUMNS,
            tablefmt=style,
            disable_numparse=True,
            colalign=("right", "left", "right", "right", "right", "right", "right"),
        )
        lines += [table, ""]
    else:
        lines += ["No policy has an ok row for every episode: nothing is ranked.", ""]
    if ranking["unranked"]:
        rows = [[entry["policy"], entry["kind"], unranked_reason(entry)] for entry in ranking["unranked"]]
        lines += ["Unranked:" if not markdown else "**Unranked**", ""]
        lines += [tabulate(rows, headers=("policy", "kind", "why"), tablefmt=style), ""]
    return "\n".join(lines)
