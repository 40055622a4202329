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
  shows it elsewhere too.

The reason is foreign text (a policy's exception, an agent's words): its
whitespace runs become one space, the controls that reach a terminal are
escaped (``canonical.escape_controls``, isolation.md §3) and it is cut at
``MAX_REASON_CHARS`` characters.
"""

from ..canonical import escape_controls, one_line

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
