"""``ember service export`` (service.md §7): a board's track as a results directory anyone can re-check.

``campaign.json`` names the board, its versions (as fixed at ``board
add``; ``package`` the running one), its scenarios (``source`` is the
exported ``scenarios/<id>.json``) and one ``records`` policy per closed,
not withdrawn submission, in the order of their ``close`` entries;
``episodes.jsonl`` is the stored row bytes of those submissions, in log
order; ``records/`` holds each row's record at its ``record`` path;
``log.jsonl`` the board's whole audit log and ``log.head.json`` its head
(its last entry's ``seq`` and ``hash``), signed now (service.md §9); ``ranking.json`` and
``statistics.json`` are computed from the directory by the project's own
ranking and statistics (B = 10,000, seed 0), or copied from the service's
derived files when those were computed from the very same ``campaign.json``
and ``episodes.jsonl`` bytes (``served_numbers``).  So ``ember verify R``,
``ember verify R --log R/log.jsonl``, ``ember rank R`` and ``ember stats R``
agree with it byte for byte.

A hidden track's key set (``--track live`` or ``final``; ``hidden`` is
``final`` on a board with final keys, else ``live``) is the same form
over the hidden scenarios with a key of that set (a scenario without one
is left out), their secret seeds of that set, and one ``records`` policy
per ranked job of that set (each team's latest ``done`` job per policy
name, in the order the jobs ended); its rows are the ``hidden_rows`` of
those jobs in log order (a failed row names no record).  The service
serves it only after the reveal; before, only the live set's ranking and
statistics (which name no seed).  The final set has nothing to export
before the reveal: its rows are logged only then.
"""

import json
import os
import shutil

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..errors import ServiceError
from ..results import CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, RECORDS_DIR, SCENARIOS_DIR, STATISTICS_FILE
from ..results.layout import LOG_HEAD_FILE
from ..results.log import LOG_FILE, ranked_submissions
from ..versions import package_version
from . import anchor, audit, tables
from .boards import load_board
from .folders import latest
from .hidden.secrecy import set_scenarios
from .store import RecordStore

#: The campaign.json versions (campaign.md §4); a board also fixes ``statistics``, which campaign.json has no key for.
CAMPAIGN_VERSIONS = ("simulator", "observation", "metrics", "ranking")
TRACKS = ("open", "live", "final", "hidden")


class NothingRanked(ServiceError):
    """The track has no ranked submission (export's exit status 2; the API's 404)."""


def snapshot(db, name):
    """(board, policies in close order, rows as (bytes, stored, row dict), log lines) read in one transaction."""
    s = tables.submissions.c
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
        if board is None:
            raise ServiceError(f"board {name!r}: no such board")
        lines = audit.entries(connection, board.id)
        order = ranked_submissions(json.loads(line) for line in lines)
        found = connection.execute(
            sa.select(s.id, s.policy, tables.teams.c.name.label("team"))
            .join(tables.teams, tables.teams.c.id == s.team_id)
            .where(s.board_id == board.id, s.state == "closed")
        ).all()
        ids = {(row.team, row.policy): row.id for row in found}
        policies = [(team, policy, ids[team, policy]) for team, policy in order if (team, policy) in ids]
        r = tables.rows.c
        rows = connection.execute(
            sa.select(r.row, r.stored).where(r.submission_id.in_([sub_id for _, _, sub_id in policies])).order_by(r.seq)
        ).all()
    return board, policies, [(bytes(row.row), row.stored) for row in rows], lines


def hidden_snapshot(db, name, track="hidden"):
    """A hidden key set's (board, ranked jobs as (team, policy, job id), rows as (bytes, stored), log lines,
    the set's keys as (scenario_id, scenario_hash, seed)), read in one transaction."""
    from .hidden.secrecy import keys_of, ranked_jobs, secret_keys

    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
        if board is None:
            raise ServiceError(f"board {name!r}: no such board")
        if board.hidden is None:
            raise NothingRanked(f"board {name!r}: has no hidden track")
        chosen = board.hidden_track(track)
        if chosen == "final" and not board.revealed:
            raise NothingRanked(f"board {name!r}: the final keys' rows are published at the reveal, not before")
        lines = audit.entries(connection, board.id)
        policies = ranked_jobs(connection, board.id, chosen)
        r = tables.hidden_rows.c
        rows = connection.execute(
            sa.select(r.row, r.stored).where(r.job_id.in_([job for _, _, job in policies])).order_by(r.seq, r.id)
        ).all()
        keys = keys_of(secret_keys(connection, board.id), chosen)
    return board, policies, [(bytes(row.row), row.stored) for row in rows], lines, keys


def _place(source, target, link):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if link:
        try:
            os.link(source, target)
            return
        except OSError:
            pass
    shutil.copyfile(source, target)


def write_new(path, data):
    """Write ``data`` to ``path``, a file that must not exist yet, and fsync it (a folder being built)."""
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def campaign_of(board, scenarios, policies):
    """campaign.json's dict of a board's track: ``scenarios`` (BoardScenario, seeds) in the board's order, one
    ``records`` policy per (team, policy) of ``policies``, in that order."""
    versions = {key: board.versions[key] for key in CAMPAIGN_VERSIONS}
    versions["package"] = package_version()
    return {
        "campaign": board.name,
        "versions": versions,
        "scenarios": [
            {
                "scenario_id": s.scenario_id,
                "scenario_hash": s.scenario_hash,
                "source": f"{SCENARIOS_DIR}/{s.scenario_id}.json",
                "seeds": seeds,
            }
            for s, seeds in scenarios
        ],
        "policies": [
            {"name": f"{team}.{policy}", "records": f"{RECORDS_DIR}/{team}.{policy}"} for team, policy in policies
        ],
    }


def write_scenarios(out, scenarios):
    """``out/scenarios/<id>.json``: each scenario's canonical bytes, the ``source`` campaign.json names."""
    os.makedirs(os.path.join(out, SCENARIOS_DIR))
    for s, _ in scenarios:
        write_new(os.path.join(out, SCENARIOS_DIR, f"{s.scenario_id}.json"), s.data + b"\n")


def export_board(db, config, name, out, track="open", link=False, replicates=None):
    """Write board ``name``'s ``track`` to the new or empty directory ``out``; returns the number of rows.

    ``link``: hard-link the records from the store where it can (the service's own derived copies).
    Raises ``NothingRanked`` (nothing written) when no submission is ranked.
    """
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ServiceError(f"{out}: expected a new or empty directory")
    if track not in TRACKS:
        raise ServiceError(f"--track: expected one of {', '.join(TRACKS)}, got {track!r}")
    if track == "open":
        board, policies, rows, lines = snapshot(db, name)
        scenarios = [(s, list(s.seeds)) for s in board.open]
    else:
        board, policies, rows, lines, keys = hidden_snapshot(db, name, track)
        scenarios = set_scenarios(board, keys)
        if not scenarios:
            raise NothingRanked(f"board {name!r}: has no {board.hidden_track(track)} key")
    if not policies:
        raise NothingRanked(f"board {name!r}: no ranked submission (no closed, not withdrawn one) on the {track} track")
    key = anchor.load_key(config.data)  # before anything is written: an export without its head is no export
    os.makedirs(out, exist_ok=True)
    store = RecordStore(config.records)
    campaign = campaign_of(board, scenarios, [(team, policy) for team, policy, _ in policies])
    write_scenarios(out, scenarios)
    for line, stored in rows:
        row = json.loads(line)
        if stored is not None:
            _place(store.path(stored), os.path.join(out, *row["record"].split("/")), link)
    episodes = b"".join(line + b"\n" for line, _ in rows)
    write_new(os.path.join(out, EPISODES_FILE), episodes)
    write_new(os.path.join(out, LOG_FILE), b"".join(line + b"\n" for line in lines))
    # The head of the log as exported (not the board's head now, which may have grown since the snapshot).
    write_new(os.path.join(out, LOG_HEAD_FILE), anchor.head_bytes(anchor.head_of_lines(key, lines, audit.now())))
    campaign = canonical_json_reference(campaign) + b"\n"
    write_new(os.path.join(out, CAMPAIGN_FILE), campaign)
    chosen = "open" if track == "open" else board.hidden_track(track)
    found = None if replicates is not None or link else served_numbers(config, name, chosen, campaign, episodes)
    ranking, statistics = found or derived_numbers(out, replicates)
    write_new(os.path.join(out, RANKING_FILE), ranking)
    write_new(os.path.join(out, STATISTICS_FILE), statistics)
    return len(rows)


def served_numbers(config, name, track, campaign, episodes):
    """(ranking.json, statistics.json) bytes the service derived for exactly these ``campaign.json`` and
    ``episodes.jsonl`` bytes (board ``name``'s newest derived version of ``track``), or None.

    The numbers are a pure function of those two files (B = 10,000, seed 0), and campaign.json names the
    package that computed them: equal bytes, equal numbers, so an export of a version the serve parent has
    derived copies them instead of running the bootstrap again.
    """
    found = latest(config, name, track)
    if found is None or found[1] is None:
        return None
    files = {}
    try:
        for file in (CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, STATISTICS_FILE):
            with open(os.path.join(found[1], file), "rb") as handle:
                files[file] = handle.read()
    except FileNotFoundError:
        return None  # pruned meanwhile: a newer version came; compute
    if files[CAMPAIGN_FILE] != campaign or files[EPISODES_FILE] != episodes:
        return None
    return files[RANKING_FILE], files[STATISTICS_FILE]


def derived_numbers(directory, replicates=None):
    """(ranking.json, statistics.json) bytes of a results directory, by the project's ranking and statistics.

    One reading of the rows serves both (with statistics.md §1's further rules: an export whose statistics
    cannot be computed is refused anyway), and the statistics start from that ranking.
    """
    from ..ranking import ranking_bytes, ranking_of
    from ..results import OkRows, StatisticsRules, read_results
    from ..stats import DEFAULT_REPLICATES, DEFAULT_SEED, require, statistics_bytes, statistics_of

    require()  # a missing extra fails before the rows are read
    ok_rows = OkRows()
    results = read_results(directory, rules=StatisticsRules(), consumers=(ok_rows,))
    ranking = ranking_of(results, ok_rows)
    statistics = statistics_of(results, ok_rows, replicates or DEFAULT_REPLICATES, DEFAULT_SEED, ranking=ranking)
    return ranking_bytes(ranking), statistics_bytes(statistics)
