"""The results directory (campaign.md §4): its one schema, strict reader and validator, and ``verify``.

Every reader of a results directory (``evaluate``'s resume, ``export``,
``rank``, ``stats``, ``report``, ``verify``) reads it here, so every
command accepts and refuses exactly the same files; ``ResultsError``
(``ember.errors``) names the file and line.  This part sits at the base
of the benchmark layer: it imports the engine and the base modules, never
a campaign, a ranking or the command line.

Its names are loaded when first asked for: a worker that writes rows
(``ember.results.rows``) loads neither the reader nor the counting table.
"""

import importlib

from ..strict_json import strict_json as strict_json  # re-exported; light, and loaded by every part that reads a row

#: Each public name and the submodule that holds it.
_PUBLIC = {
    "CampaignJson": "campaign_json",
    "MAX_CAMPAIGN_BYTES": "campaign_json",
    "POLICY_KINDS": "campaign_json",
    "CountingTable": "counting",
    "OkRows": "counting",
    "Place": "counting",
    "CAMPAIGN_FILE": "layout",
    "EPISODES_FILE": "layout",
    "LOGS_DIR": "layout",
    "RANKING_FILE": "layout",
    "RECORDS_DIR": "layout",
    "SCENARIOS_DIR": "layout",
    "STATISTICS_FILE": "layout",
    "TORN_FILE": "layout",
    "EpisodeOutcome": "outcome",
    "exposure_of": "outcome",
    "RecordPresence": "presence",
    "CheckedLines": "reader",
    "Results": "reader",
    "check_campaign": "reader",
    "file_kind": "reader",
    "open_regular": "reader",
    "parse_campaign": "reader",
    "read_campaign_value": "reader",
    "read_results": "reader",
    "results_of_bytes": "reader",
    "MAX_LINE_BYTES": "rows",
    "ROW_KEYS": "rows",
    "Row": "rows",
    "RowRules": "rules",
    "StatisticsRules": "rules",
}

__all__ = sorted([*_PUBLIC, "strict_json"])


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    globals()[name] = value
    return value
