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


class MetricColumns:
    """A reader's consumer: the names of every metric leaf of the rows, which are the CSV's columns."""

    def __init__(self):
        self.names = set()

    def add(self, row):
        if row.metrics is not None:
            found = {}
            _leaves(row.metrics, "", found)
            self.names.update(found)


#: The CSV is handed on in pieces of about this many characters.
CHUNK_CHARS = 1 << 20


def export_chunks(results_dir, warn=None):
    """The CSV of a results directory as an iterator of UTF-8 pieces; raises ``ResultsError`` for bad input.

    The directory is read and checked whole first (``warn(text)`` receives
    each warning, its file named in ``results_dir``); then the counting rows
    are read again one at a time, policy by policy in the campaign's order,
    scenario by scenario, seeds ascending, so memory holds one row and the
    counting table however many rows there are.
    """
    columns = MetricColumns()
    results = read_results(results_dir, consumers=(columns,))
    if warn is not None:
        for warning in results.warnings:
            warn(os.path.join(results_dir, warning))
    return _pieces(results, sorted(columns.names))


def _pieces(results, metric_columns):
    campaign = results.campaign
    slots = (
        (policy, (scenario_hash, seed))
        for policy in campaign.policies
        for scenario_hash, (_, seeds) in campaign.scenarios.items()
        for seed in sorted(seeds)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIXED_COLUMNS + tuple(metric_columns))
    for row in results.counting_rows(slots):
        if row is None:
            continue
        found = {}
        if row.metrics is not None:
            _leaves(row.metrics, "", found)
        writer.writerow([_cell(row.value[c]) for c in FIXED_COLUMNS] + [_cell(found.get(c)) for c in metric_columns])
        if out.tell() >= CHUNK_CHARS:
            yield out.getvalue().encode("utf-8")
            out.seek(0)
            out.truncate()
    yield out.getvalue().encode("utf-8")


def export_csv(results_dir, warn=None):
    """The CSV text of a results directory (``export_chunks`` joined); raises ``ResultsError`` for bad input."""
    return b"".join(export_chunks(results_dir, warn)).decode("utf-8")
