"""``ember export``: the counting rows of a results directory as CSV (campaign.md §6)."""

import csv
import io
import os

from ..errors import CampaignError
from .store import CAMPAIGN_FILE, EPISODES_FILE, read_campaign_json, read_rows

FIXED_COLUMNS = ("scenario_id", "scenario_hash", "seed", "policy", "status", "error", "steps", "elapsed_s")
#: Metric families left out of the CSV: per-person tables and per-person step maps.
_SKIPPED = ("people", "time.evacuation_steps")


def _leaves(value, prefix, out):
    for key, item in value.items():
        name = f"{prefix}{key}"
        if name in _SKIPPED:
            continue
        if isinstance(item, dict):
            _leaves(item, f"{name}.", out)
        elif item is None or isinstance(item, (bool, int, float)):
            out[name] = item


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def export_csv(results_dir, warn=None):
    """The CSV text of a results directory; raises ``CampaignError`` for bad input."""
    results_dir = os.path.abspath(results_dir)
    campaign_path = os.path.join(results_dir, CAMPAIGN_FILE)
    episodes_path = os.path.join(results_dir, EPISODES_FILE)
    for path in (campaign_path, episodes_path):
        if not os.path.isfile(path):
            raise CampaignError(f"{path}: missing; not a results directory of 'ember evaluate'.")
    campaign = read_campaign_json(campaign_path)
    rows, torn = read_rows(episodes_path, campaign)
    if torn and warn is not None:
        warn(f"{episodes_path}: a torn last line ({len(torn)} bytes) was ignored.")
    ordered = []
    for policy in campaign["policies"]:
        for sc in campaign["scenarios"]:
            for seed in sorted(sc["seeds"]):
                row = rows.counting.get((policy["name"], sc["scenario_hash"], seed))
                if row is not None:
                    ordered.append(row)
    leaves = []
    names = set()
    for row in ordered:
        found = {}
        if row["metrics"] is not None:
            _leaves(row["metrics"], "", found)
        leaves.append(found)
        names.update(found)
    metric_columns = sorted(names)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIXED_COLUMNS + tuple(metric_columns))
    for row, found in zip(ordered, leaves):
        writer.writerow([_cell(row[c]) for c in FIXED_COLUMNS] + [_cell(found.get(c)) for c in metric_columns])
    return out.getvalue()
