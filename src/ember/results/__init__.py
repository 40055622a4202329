"""The results directory (campaign.md §4): its one schema, strict reader and validator, and ``verify``.

Every reader of a results directory (``evaluate``'s resume, ``export``,
``rank``, ``stats``, ``report``, ``verify``) reads it here, so every
command accepts and refuses exactly the same files; ``ResultsError``
(``ember.errors``) names the file and line.  This part sits at the base
of the benchmark layer: it imports the engine and the base modules, never
a campaign, a ranking or the command line.
"""

from ..strict_json import strict_json
from .campaign_json import MAX_CAMPAIGN_BYTES, POLICY_KINDS, CampaignJson
from .counting import CountingTable, OkRows, Place
from .layout import (
    CAMPAIGN_FILE,
    EPISODES_FILE,
    LOGS_DIR,
    RANKING_FILE,
    RECORDS_DIR,
    SCENARIOS_DIR,
    STATISTICS_FILE,
    TORN_FILE,
)
from .outcome import EpisodeOutcome, exposure_of
from .presence import RecordPresence
from .reader import (
    CheckedLines,
    Results,
    check_campaign,
    file_kind,
    open_regular,
    parse_campaign,
    read_campaign_value,
    read_results,
    results_of_bytes,
)
from .rows import MAX_LINE_BYTES, ROW_KEYS, Row
from .rules import RowRules, StatisticsRules

__all__ = [
    "CheckedLines",
    "CAMPAIGN_FILE",
    "EPISODES_FILE",
    "LOGS_DIR",
    "MAX_CAMPAIGN_BYTES",
    "MAX_LINE_BYTES",
    "POLICY_KINDS",
    "RANKING_FILE",
    "RECORDS_DIR",
    "ROW_KEYS",
    "SCENARIOS_DIR",
    "STATISTICS_FILE",
    "TORN_FILE",
    "CampaignJson",
    "CountingTable",
    "EpisodeOutcome",
    "OkRows",
    "Place",
    "RecordPresence",
    "Results",
    "Row",
    "RowRules",
    "StatisticsRules",
    "check_campaign",
    "exposure_of",
    "file_kind",
    "open_regular",
    "parse_campaign",
    "read_campaign_value",
    "read_results",
    "results_of_bytes",
    "strict_json",
]
