"""A row of ``episodes.jsonl`` both ways (campaign.md §4): the one row constructor, and the one row check.

A row is the result of one attempt at one (policy, episode key).  Campaigns
(``ember.campaign``) and the hosted service make rows with these two
functions only, so a row has exactly ``ROW_KEYS``, ``steps`` always comes
from the metrics, ``elapsed_s`` is always rounded to milliseconds and a
failed row's ``error`` is always one escaped line:

- ``ok_row(...)``: a measured episode (``metrics`` is output.md's
  ``to_dict()``; ``record`` and ``record_sha256`` both given or both None);
- ``failed_row(...)``: an attempt that gave no metrics, with its reason;
- ``reason_line(text)``: the reason as a row holds it, for a caller that
  shows it elsewhere too;
- ``row_line(row, results)``: the row as its line of ``episodes.jsonl``,
  checked by the results layer where the episode ran (a ``RowLine``: a
  worker sends these bytes, which the writer appends as they are).

The reason is foreign text (a policy's exception, an agent's words): its
whitespace runs become one space, the controls that reach a terminal are
escaped (``canonical.escape_controls``, isolation.md §3) and it is cut at
``MAX_REASON_CHARS`` characters.

Every reader checks each parsed line with ``check_row`` (campaign.md §4,
ranking.md §1), which returns a ``Row``, what readers keep of it, and
raises ``Invalid`` with the reason; the reader adds the file and line.
"""

import typing

# rows hold floats: json.dumps spelling (5e-05), which orjson does not write
from ..canonical import canonical_json_reference, escape_controls, one_line
from ..errors import ResultsError
from ..strict_json import shown
from ..versions import METRICS_VERSION
from .layout import EPISODES_FILE
from .outcome import EpisodeOutcome
from .values import SHA256_HEX, Invalid, json_object, member, relative_path, string

#: The keys of a row, in code point order (campaign.md §4).
ROW_KEYS = (
    "elapsed_s", "error", "metrics", "policy", "record", "record_sha256",
    "scenario_hash", "scenario_id", "seed", "status", "steps",
)  # fmt: skip
#: One line of episodes.jsonl, its newline included, at most this many bytes (docs/campaigns.md).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: A failed row's reason is at most this many characters (longer ones end "...").
MAX_REASON_CHARS = 300
_CUT = "..."


def reason_line(text):
    """``text`` (any object: its ``str``) as a failed row's ``error``: one line, escaped, at most
    ``MAX_REASON_CHARS`` characters."""
    words = one_line(text)
    escaped = escape_controls(words)
    if len(escaped) <= MAX_REASON_CHARS:
        return escaped
    # Cut between characters of the original text, never inside an escape.
    kept, size = [], 0
    for char in words:
        piece = escape_controls(char)
        if size + len(piece) > MAX_REASON_CHARS - len(_CUT):
            break
        kept.append(piece)
        size += len(piece)
    return "".join(kept) + _CUT


def _row(scenario_id, scenario_hash, seed, policy, status, error, metrics, steps, record, record_sha256, elapsed_s):
    return {
        "scenario_id": scenario_id,
        "scenario_hash": scenario_hash,
        "seed": seed,
        "policy": policy,
        "status": status,
        "error": error,
        "metrics": metrics,
        "steps": steps,
        "record": record,
        "record_sha256": record_sha256,
        "elapsed_s": round(float(elapsed_s), 3),
    }


def ok_row(*, scenario_id, scenario_hash, seed, policy, metrics, record=None, record_sha256=None, elapsed_s):
    """The row of a measured episode.

    ``metrics``: the episode's metrics dict (output.md ``to_dict()``), whose
    ``time.episode_steps`` is the row's ``steps``; ``record``: the record's
    path as campaign.md §4 says (relative to RESULTS_DIR when kept, to the
    campaign folder when submitted) or None; ``record_sha256``: the hex
    SHA-256 of the record's decompressed bytes when ``record`` is given;
    ``elapsed_s``: the attempt's wall time in seconds (rounded here).
    """
    steps = metrics["time"]["episode_steps"]
    return _row(scenario_id, scenario_hash, seed, policy, "ok", None, metrics, steps, record, record_sha256, elapsed_s)


def failed_row(*, scenario_id, scenario_hash, seed, policy, error, elapsed_s=0.0):
    """The row of an attempt that failed: ``error`` (any text, foreign or not) becomes ``reason_line(error)``."""
    reason = reason_line(error)
    return _row(scenario_id, scenario_hash, seed, policy, "failed", reason, None, None, None, None, elapsed_s)


class RowLine(typing.NamedTuple):
    """A row as its line of ``episodes.jsonl`` (canonical bytes and the newline), checked where it was made.

    What the command needs of it travels beside the bytes, so the command
    neither decodes nor re-encodes a row: ``policy``, ``scenario_hash`` and
    ``seed`` (its identity, which the writer holds against the campaign),
    ``ok`` (its status is "ok") and ``elapsed_s`` (as the row holds it).  A
    tuple, so a worker's pickle of it is bytes and scalars, no dict.
    """

    line: bytes
    policy: str
    scenario_hash: str
    seed: int
    ok: bool
    elapsed_s: float


class _OneEpisode:
    """The campaign ``check_row`` holds a row against, reduced to the row's own episode and policy.

    Where the episode ran there is no campaign.json, only the task, whose
    identity the command made from the campaign; the command checks the
    line's identity against its campaign when it appends it.
    """

    __slots__ = ("policies", "keys", "scenarios")

    def __init__(self, row):
        self.policies = {row["policy"]: None}
        self.keys = {(row["scenario_hash"], row["seed"])}
        self.scenarios = {row["scenario_hash"]: (row["scenario_id"],)}


def row_line(row, results):
    """``row`` (made by ``ok_row`` / ``failed_row``) as a checked ``RowLine``.

    Its canonical bytes (simulator.md §1's reference encoder); a line longer
    than a reader reads (``MAX_LINE_BYTES``) becomes a failed row saying so.
    A row the results layer refuses is EMBER's defect: a ``ResultsError``
    naming episodes.jsonl of ``results``, never a line.
    """
    line = canonical_json_reference(row) + b"\n"
    if len(line) > MAX_LINE_BYTES:
        error = f"the row is {len(line):,} bytes, more than the {MAX_LINE_BYTES:,} a row may have (docs/campaigns.md)"
        fields = {key: row[key] for key in ("scenario_id", "scenario_hash", "seed", "policy", "elapsed_s")}
        row = failed_row(**fields, error=error)
        line = canonical_json_reference(row) + b"\n"
    try:
        check_row(row, _OneEpisode(row))
    except Invalid as exc:  # EMBER made a row it cannot read back: a defect, never written
        raise ResultsError(EPISODES_FILE, None, f"refusing to write a row that is not a row: {exc}", results) from None
    return RowLine(line, row["policy"], row["scenario_hash"], row["seed"], row["status"] == "ok", row["elapsed_s"])


# --- the check of a row that every reader makes ----------------------------------------


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
        json_object(row["metrics"], "$.metrics")
        if type(row["steps"]) is not int or row["steps"] < 0:
            raise Invalid(f"$.steps: expected an integer >= 0 on an ok row, got {shown(row['steps'])}")
    else:
        string(row["error"], "$.error")
        for key in ("metrics", "steps"):
            if row[key] is not None:
                raise Invalid(f"$.{key}: expected null on a failed row, got {shown(row[key])}")


def _check_record(row):
    if row["record"] is None:
        if row["record_sha256"] is not None:
            raise Invalid(f"$.record_sha256: expected null when record is null, got {shown(row['record_sha256'])}")
        return
    relative_path(row["record"], "$.record")
    if type(row["record_sha256"]) is not str or not SHA256_HEX.fullmatch(row["record_sha256"]):
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
        found = member(metrics, field, "$.metrics")
        if found != expected or type(found) is not type(expected):
            raise Invalid(f"$.metrics.{field}: expected the row's {shown(expected)}, got {shown(found)}")
    episode = EpisodeOutcome(metrics)
    for field, expected in (("scenario_id", row["scenario_id"]), ("metrics_version", METRICS_VERSION)):
        found = member(metrics, field, "$.metrics")
        if found != expected or type(found) is not str:
            whose = "the row's" if field == "scenario_id" else "metrics version"
            raise Invalid(f"$.metrics.{field}: expected {whose} {shown(expected)}, got {shown(found)}")
    steps = member(metrics["time"], "episode_steps", "$.metrics.time")
    if steps != row["steps"] or type(steps) is not int:
        raise Invalid(f"$.metrics.time.episode_steps: expected the row's steps {row['steps']}, got {shown(steps)}")
    return episode


def check_row(value, campaign):
    """The checks of campaign.md §4 and ranking.md §1 on one parsed line, bar the order of rows.

    ``campaign`` is a ``CampaignJson``.  Returns a ``Row`` (line 0, the parsed
    row kept); raises ``Invalid``.
    """
    row = json_object(value, "$")
    _check_keys(row)
    string(row["scenario_id"], "$.scenario_id")
    string(row["scenario_hash"], "$.scenario_hash")
    if type(row["seed"]) is not int:
        raise Invalid(f"$.seed: expected an integer, got {shown(row['seed'])}")
    string(row["policy"], "$.policy")
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
