"""The one row constructor (campaign.md §4): every writer of ``episodes.jsonl`` makes its rows here.

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
"""

import typing

# rows hold floats: json.dumps spelling (5e-05), which orjson does not write
from ..canonical import canonical_json_reference, escape_controls, one_line
from ..errors import ResultsError
from .layout import EPISODES_FILE
from .schema import MAX_LINE_BYTES, Invalid, check_row

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
