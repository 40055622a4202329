"""The audit log of a service board (service.md §4), both ways: one entry's bytes and hash, and the check of
``ember verify RESULTS_DIR --log LOG``.

An entry is canonical JSON with exactly ``LOG_KEYS`` and its ``hash``:
the lowercase hex SHA-256 of the 64 ASCII hex characters of ``prev``
followed by the canonical JSON of the entry without ``hash``; ``prev`` is
the previous entry's hash (64 zeros for the first).  The service writes
entries with ``entry_line`` and ``ember verify --log`` reads them back
here, so writer and checker share one definition.

The check: the chain holds line by line, and the directory's
``episodes.jsonl`` is exactly the ``row`` entries' rows of the submissions
that have a ``close`` entry and no later ``withdraw``, in log order.  A
hidden track's export (after the ``reveal``: its rows are on the revealed
secret seeds) is checked against the ``hidden_row`` entries instead:
each row's SHA-256 is the ``row_sha256`` of the log's ranked hidden row of
its place (each policy's latest job of the export's key set, live or final,
in log order).
"""

import hashlib
import os

from ..canonical import canonical_json_reference
from ..strict_json import shown, strict_json
from . import layout
from .layout import LOG_FILE
from .reader import open_regular
from .rows import MAX_LINE_BYTES

GENESIS = "0" * 64
LOG_KEYS = ("at", "board", "data", "event", "policy", "prev", "row", "row_sha256", "seq", "team")
EVENTS = (
    "board", "row", "close", "withdraw", "hidden_row", "reveal", "reverify",
    "operator_withdraw", "team_disable", "job_rerun",
)  # fmt: skip
#: The entries that take a submission out of the ranking: its team's, and the operator's.
WITHDRAWALS = ("withdraw", "operator_withdraw")


def entry_hash(entry):
    """The ``hash`` of an entry (a dict with ``LOG_KEYS``, without ``hash``)."""
    return hashlib.sha256(entry["prev"].encode("ascii") + canonical_json_reference(entry)).hexdigest()


def entry_line(entry):
    """(the entry's canonical JSON with its ``hash``, without a newline; the hash)."""
    digest = entry_hash(entry)
    return canonical_json_reference({**entry, "hash": digest}), digest


def row_sha256(row, line=None):
    """The SHA-256 of a row's canonical JSON (a ``hidden_row`` entry's ``row_sha256``); ``line``: that JSON,
    when the caller has made it already."""
    return hashlib.sha256(canonical_json_reference(row) if line is None else line).hexdigest()


def _lines(path, shown_name):
    with open_regular(path, shown_name, missing="missing (--log)") as handle:
        while True:
            data = handle.readline(MAX_LINE_BYTES)
            if not data:
                return
            if not data.endswith(b"\n"):
                yield None if len(data) >= MAX_LINE_BYTES else data
                return
            yield data[:-1]


def check_log_entries(lines):
    """Check the chain of a log's lines (bytes without newlines); returns (entries, problems).

    A problem is ``(line, reason)``; the entries are those read before the first broken one.
    """
    entries = []
    prev = GENESIS
    board = None
    for number, data in enumerate(lines, 1):
        if data is None:
            return entries, [(number, f"a log line longer than {MAX_LINE_BYTES:,} bytes or without its newline")]
        try:
            value = strict_json(data)
        except ValueError as exc:
            return entries, [(number, f"not a JSON text: {exc}")]
        if not isinstance(value, dict) or set(value) != {*LOG_KEYS, "hash"}:
            keys = sorted(value) if isinstance(value, dict) else type(value).__name__
            return entries, [(number, f"expected an entry with keys {', '.join(LOG_KEYS)}, hash; got {keys}")]
        entry = {key: value[key] for key in LOG_KEYS}
        if canonical_json_reference(value) != data:
            return entries, [(number, "the entry is not in canonical JSON (it was re-encoded)")]
        if value["seq"] != number or type(value["seq"]) is not int:
            return entries, [(number, f"$.seq: expected {number}, got {shown(value['seq'])}")]
        if value["prev"] != prev:
            return entries, [(number, f"$.prev: expected the previous entry's hash {prev}, got {shown(value['prev'])}")]
        if value["event"] not in EVENTS:
            return entries, [(number, f"$.event: expected one of {', '.join(EVENTS)}, got {shown(value['event'])}")]
        if number == 1 and value["event"] != "board":
            return entries, [(number, f"$.event: the first entry is 'board', got {shown(value['event'])}")]
        if board is not None and value["board"] != board:
            return entries, [
                (number, f"$.board: the log is {shown(board)}'s, this entry names {shown(value['board'])}")
            ]
        board = value["board"]
        digest = entry_hash(entry)
        if value["hash"] != digest:
            return entries, [(number, f"$.hash: the entry hashes to {digest}, it says {shown(value['hash'])}")]
        prev = digest
        entries.append(value)
    return entries, []


def ranked_submissions(entries):
    """The (team, policy) of each submission the log ranks (closed and not withdrawn since), in the order of
    their last ``close`` entries."""
    ranked = {}
    for entry in entries:
        submission = (entry["team"], entry["policy"])
        if entry["event"] == "close":
            ranked.pop(submission, None)
            ranked[submission] = True
        elif entry["event"] in WITHDRAWALS:
            ranked.pop(submission, None)
    return list(ranked)


def ranked_rows(entries):
    """The rows the board ranks, in log order: the ``row`` entries of submissions closed and not withdrawn."""
    ranked = set(ranked_submissions(entries))
    return [entry["row"] for entry in entries if entry["event"] == "row" and (entry["team"], entry["policy"]) in ranked]


def _entry_set(entry):
    """A ``hidden_row`` entry's key set (``data.set``; an entry written before sets existed: ``live``)."""
    return (entry["data"] or {}).get("set", "live")


def hidden_ranked_sha256(entries, chosen=None):
    """The ``row_sha256`` of the hidden rows a revealed board ranks, in log order: for each (team, policy), the
    ``hidden_row`` entries of its latest job (the job, ``data.job``, whose first entry comes last); with
    ``chosen``, only the entries of that key set (``live`` or ``final``, service.md §9)."""
    entries = [e for e in entries if e["event"] != "hidden_row" or chosen is None or _entry_set(e) == chosen]
    latest = {}
    for entry in entries:
        if entry["event"] == "hidden_row":
            job = (entry["data"] or {}).get("job")
            submission = (entry["team"], entry["policy"])
            if latest.get(submission, (None,))[0] != job:
                latest[submission] = (job,)
    chosen = {(team, policy, job[0]) for (team, policy), job in latest.items()}
    return [
        entry["row_sha256"]
        for entry in entries
        if entry["event"] == "hidden_row"
        and (entry["team"], entry["policy"], (entry["data"] or {}).get("job")) in chosen
    ]


def _revealed_seeds(entries):
    """{(scenario_id, seed): key set} of the log's ``reveal`` entry (untagged keys: ``live``), or None."""
    for entry in entries:
        if entry["event"] == "reveal" and isinstance(entry["data"], dict):
            return {
                (key[0], key[2]): key[3] if len(key) == 4 else "live"
                for key in entry["data"].get("keys", [])
                if isinstance(key, list) and len(key) in (3, 4)
            }
    return None


def _check_hidden(where, actual, entries, chosen):
    """The hidden track's rule: each row hashes to the ``row_sha256`` of the log's ranked hidden row of its place
    (of the export's key set ``chosen``)."""
    expected = hidden_ranked_sha256(entries, chosen)
    for number, (mine, theirs) in enumerate(zip(actual, expected), 1):
        if mine is None or hashlib.sha256(mine).hexdigest() != theirs:
            return [f"{where}:{number}: the row does not hash to the log's ranked hidden row {number} (its row_sha256)"]
    if len(actual) != len(expected):
        return [
            f"{where}: {len(actual)} rows, the log ranks {len(expected)} hidden rows (the hidden_row entries of "
            "each policy's latest job, in log order)"
        ]
    return []


def _hidden_rows(actual, seeds):
    """The key set of the directory's rows when they are a hidden track's (every one on a revealed secret seed
    of that one set), else None."""
    if not seeds or not actual:
        return None
    sets = set()
    for line in actual:
        try:
            row = strict_json(line) if line is not None else None
        except ValueError:
            return None
        if not isinstance(row, dict) or (row.get("scenario_id"), row.get("seed")) not in seeds:
            return None
        sets.add(seeds[row.get("scenario_id"), row.get("seed")])
    return sets.pop() if len(sets) == 1 else None


def check_log(directory, log_path):
    """The problems (strings, in order) of ``ember verify DIRECTORY --log LOG``: the chain, then the rows.

    Raises ``ResultsError`` when the log or ``episodes.jsonl`` cannot be read at all.
    """
    shown_log = os.fspath(log_path)
    entries, problems = check_log_entries(_lines(log_path, shown_log))
    if problems:
        return [f"{shown_log}:{line}: {reason}" for line, reason in problems]
    expected = [canonical_json_reference(row) for row in ranked_rows(entries)]
    episodes = os.path.join(directory, layout.EPISODES_FILE)
    actual = list(_lines(episodes, os.path.normpath(episodes)))
    where = os.path.normpath(episodes)
    chosen = _hidden_rows(actual, _revealed_seeds(entries))
    if chosen is not None:
        return _check_hidden(where, actual, entries, chosen)
    for number, (mine, theirs) in enumerate(zip(actual, expected), 1):
        if mine != theirs:
            return [f"{where}:{number}: the row is not the log's ranked row {number} (closed, not withdrawn)"]
    if len(actual) != len(expected):
        return [
            f"{where}: {len(actual)} rows, the log ranks {len(expected)} (the row entries of closed, "
            "not withdrawn submissions, in log order)"
        ]
    return []


__all__ = [
    "EVENTS",
    "GENESIS",
    "LOG_FILE",
    "LOG_KEYS",
    "check_log",
    "check_log_entries",
    "entry_hash",
    "entry_line",
    "ranked_rows",
    "row_sha256",
]
