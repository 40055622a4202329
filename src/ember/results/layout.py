"""Every name and path rule of a results directory (campaign.md §4), and nowhere else.

A results directory holds::

    campaign.json                          CAMPAIGN_FILE
    episodes.jsonl                         EPISODES_FILE
    episodes.jsonl.torn                    TORN_FILE (torn bytes set aside on resume)
    scenarios/<scenario_id>.json           scenario_file()
    records/<policy>/<scenario_id>/<seed>.record.gz   kept_record()
    logs/<policy>/<scenario_id>/<seed>.stderr      log_file()
    code/<policy>.json                     code_file() (an agent or python policy's code list)
    ranking.json                           RANKING_FILE
    statistics.json                        STATISTICS_FILE (only 'ember stats -o' writes it)
    bounds.jsonl                           BOUNDS_FILE (bounds.md §5: each key's optima)
    log.jsonl, log.head.json               LOG_FILE, LOG_HEAD_FILE (a service board's export only)

Paths returned here are relative to the results directory, in the form a
row's ``record`` holds (``os.path.join``).  Temporary files (a kept record
or a log being written, campaign.json being replaced) carry
``TEMPORARY_MARK`` in their name; ``is_temporary`` and
``campaign_temporary`` recognise them, so a run can sweep what a killed run
left.
"""

import os

CAMPAIGN_FILE = "campaign.json"
EPISODES_FILE = "episodes.jsonl"
TORN_FILE = EPISODES_FILE + ".torn"
RANKING_FILE = "ranking.json"
#: Written only by 'ember stats -o'; like ranking.json it describes rows a new run may change.
STATISTICS_FILE = "statistics.json"
#: Each key's optima (bounds.md §5), written by 'ember bounds DIR' and 'ember evaluate --bounds'.
BOUNDS_FILE = "bounds.jsonl"
SCENARIOS_DIR = "scenarios"
#: A service board's export only (service.md §7): the board's audit log.
LOG_FILE = "log.jsonl"
#: A service board's export only (service.md §9): the log's head, signed by the service when it exported.
LOG_HEAD_FILE = "log.head.json"
RECORDS_DIR = "records"
LOGS_DIR = "logs"
#: Each agent or python policy's code list, whose SHA-256 is campaign.json's ``code`` (docs/campaigns.md).
CODE_DIR = "code"
#: What a kept record's file name ends with (gzip, mtime 0: reproducible bytes).
KEPT_RECORD_SUFFIX = ".record.gz"
#: The standard streams a log is kept for: standard error only (a python policy's standard
#: output is its host's answer channel and goes to the same log; an agent's is the protocol).
LOG_STREAMS = ("stderr",)
#: Part of every temporary name a writer of the directory makes.
TEMPORARY_MARK = ".tmp"
#: The folders where workers write files under temporary names (kept records, logs).
WORKER_FOLDERS = (RECORDS_DIR, LOGS_DIR)
#: The derived files a run removes at its start: they describe rows the run changes.
DERIVED_FILES = (RANKING_FILE, STATISTICS_FILE)
#: Every top-level entry a writer of the directory makes (files and folders).
TOP_LEVEL = (CAMPAIGN_FILE, EPISODES_FILE, TORN_FILE, SCENARIOS_DIR, RECORDS_DIR, LOGS_DIR, CODE_DIR) + DERIVED_FILES


def scenario_file(scenario_id):
    """``scenarios/<scenario_id>.json``: the scenario's canonical JSON."""
    return os.path.join(SCENARIOS_DIR, f"{scenario_id}.json")


def code_file(policy):
    """``code/<policy>.json``: the policy's code list (canonical JSON; its SHA-256 is the policy's ``code``)."""
    return os.path.join(CODE_DIR, f"{policy}.json")


def episode_folder(top, policy, scenario_id):
    """``<top>/<policy>/<scenario_id>``: where an episode's kept record or logs live (``top`` a WORKER_FOLDERS)."""
    return os.path.join(top, policy, scenario_id)


def kept_record(policy, scenario_id, seed):
    """``records/<policy>/<scenario_id>/<seed>.record.gz``: a kept record, as a row's ``record`` names it."""
    return os.path.join(episode_folder(RECORDS_DIR, policy, scenario_id), f"{seed}{KEPT_RECORD_SUFFIX}")


def kept_record_temporary(seed, unique):
    """A kept record's temporary file name in its folder: ends ``.record.gz`` (the record opener
    compresses by the name) and holds ``TEMPORARY_MARK``."""
    return f".{seed}{TEMPORARY_MARK}{unique}{KEPT_RECORD_SUFFIX}"


def log_file(policy, scenario_id, seed, stream):
    """``logs/<policy>/<scenario_id>/<seed>.<stream>``, ``stream`` one of ``LOG_STREAMS``."""
    if stream not in LOG_STREAMS:
        raise ValueError(f"stream: expected one of {', '.join(LOG_STREAMS)}, got {stream!r}")
    return os.path.join(episode_folder(LOGS_DIR, policy, scenario_id), f"{seed}.{stream}")


def temporary_name(path, unique):
    """A temporary sibling of ``path`` (a log being written): ``path`` + ``TEMPORARY_MARK`` + ``unique``."""
    return f"{path}{TEMPORARY_MARK}{unique}"


def is_temporary(name):
    """True for a file name a writer of the directory uses while writing (swept by the next run)."""
    return TEMPORARY_MARK in name


def campaign_temporary(name):
    """True for a temporary campaign.json (``files.write_atomically`` names it ``.campaign.json.tmpPID.N``)."""
    return name.startswith((CAMPAIGN_FILE + TEMPORARY_MARK, f".{CAMPAIGN_FILE}{TEMPORARY_MARK}"))
