"""``ember export``: the counting rows of a results directory as CSV (campaign.md §6)."""

import csv
import io
import os

from .reader import read_results

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
    """The CSV text of a results directory; raises ``ResultsError`` for bad input (``ember.results``).

    ``warn(text)`` receives each warning (a torn last line), its file named in ``results_dir``.
    """
    results = read_results(results_dir, keep_rows=True)
    if warn is not None:
        for warning in results.warnings:
            warn(os.path.join(results_dir, warning))
    campaign = results.campaign
    ordered = []
    for policy in campaign.policies:
        for scenario_hash, (_, seeds) in campaign.scenarios.items():
            for seed in sorted(seeds):
                row = results.counting.get((policy, (scenario_hash, seed)))
                if row is not None:
                    ordered.append(row)
    leaves = []
    names = set()
    for row in ordered:
        found = {}
        if row.metrics is not None:
            _leaves(row.metrics, "", found)
        leaves.append(found)
        names.update(found)
    metric_columns = sorted(names)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIXED_COLUMNS + tuple(metric_columns))
    for row, found in zip(ordered, leaves):
        writer.writerow([_cell(row.value[c]) for c in FIXED_COLUMNS] + [_cell(found.get(c)) for c in metric_columns])
    return out.getvalue()
