"""A multi-policy results directory whose rows are in no useful order, and batch readings of it.

The streamed commands (``ember export``, ``ember report``) read a results
directory a row at a time; these helpers compute the same outputs the
simple way, every row parsed and held at once, as the code before the
streaming did: the CSV of the counting rows, and the report's plot data
(every seed's evacuation curve in a matrix, reduced by numpy).
"""

import csv
import io
import json
import random

from ember.report.data import EpisodeView, PlotData, evacuation_curve
from ember.results import EpisodeOutcome
from ember.results.export import FIXED_COLUMNS

from helpers.ranking_results import ResultsDir, campaign_dict, failed_row, hand_metrics, ok_row

#: (scenario_id, hash, population, seeds): populations that make shares inexact floats.
SCENARIOS = (
    ("hall", "sha256:" + "a" * 64, 7, tuple(range(0, 60, 2))),
    ("room", "sha256:" + "b" * 64, 11, (3, 5, 8, 13, 21, 34, 55, 89, 144)),
    ("still", "sha256:" + "c" * 64, 3, tuple(range(1, 21))),  # every episode 0 steps: a horizon of 0
)
RANKED = ("greedy", "planner", "random")
#: Unranked: one episode has no row, another only a failed one.
UNRANKED = "stay"


def _metrics(draw, scenario_id, shash, population, seed):
    still = scenario_id == "still"
    steps = 0 if still else draw.randrange(1, 40)
    evacuated = draw.randrange(0, population + 1)
    casualties = draw.randrange(0, population - evacuated + 1)
    people = [f"p{i}" for i in range(population)]
    draw.shuffle(people)
    evacuation_steps = {person: (0 if still else draw.randrange(0, steps + 1)) for person in people[:evacuated]}
    exits = {}
    for _ in range(evacuated):
        door = draw.choice(("north", "south", "west"))
        exits[door] = exits.get(door, 0) + 1
    histogram = {d: draw.randrange(0, 9) for d in draw.sample(range(1, 12), draw.randrange(0, 5))}
    metrics = hand_metrics(
        scenario_id,
        shash,
        seed,
        casualties=casualties,
        evacuated=evacuated,
        stranded=population - evacuated - casualties,
        population=population,
        time_to_safety=draw.randrange(0, 500),
        histogram=histogram,
        evacuation_steps=evacuation_steps,
        exits=exits,
    )
    metrics["time"]["episode_steps"] = steps
    metrics["extra"] = {"score": draw.random(), "flag": draw.random() < 0.5, "note": None}
    return metrics


def shuffled_results(path, seed=0):
    """A ``ResultsDir`` at ``path``: ranked and unranked policies, failed rows before ok ones, rows shuffled."""
    draw = random.Random(seed)
    policies = [(name, "builtin", name) for name in (*RANKED, UNRANKED)]
    results = ResultsDir(
        path, campaign_dict("shuffled", [(s, h, f"{s}.json", seeds) for s, h, _, seeds in SCENARIOS], policies)
    )
    groups = []
    for scenario_id, shash, population, seeds in SCENARIOS:
        for name, _, _ in policies:
            for seed_ in seeds:
                if name == UNRANKED and (scenario_id, seed_) == ("room", 8):
                    continue  # no row at all
                only_failed = name == UNRANKED and (scenario_id, seed_) == ("room", 13)
                failed = max(draw.choice((0, 0, 0, 1, 2)), only_failed)
                rows = [failed_row(name, scenario_id, shash, seed_) for _ in range(failed)]
                if not only_failed:
                    row = ok_row(name, _metrics(draw, scenario_id, shash, population, seed_))
                    row["elapsed_s"] = draw.choice((0.125, 3, 1e-07))
                    rows.append(row)
                groups.append(rows)
    # Interleave the episodes at random, each episode's rows in their order (failed rows before its ok row).
    live, order = [group for group in groups if group], []
    while live:
        i = draw.randrange(len(live))
        order.append(live[i].pop(0))
        if not live[i]:
            live.pop(i)
    results.append(*order)
    return results


def counting_rows_whole(data):
    """(policy, (scenario_hash, seed)) -> the parsed last row of each, from episodes.jsonl's bytes."""
    counting = {}
    for line in data.split(b"\n")[:-1]:
        value = json.loads(line)
        counting[value["policy"], (value["scenario_hash"], value["seed"])] = value
    return counting


def _leaves(value, prefix, out):
    for key, item in value.items():
        name = f"{prefix}{key}"
        if name in ("people", "time.evacuation_steps"):
            continue
        if isinstance(item, dict):
            _leaves(item, f"{name}.", out)
        elif item is None or isinstance(item, (bool, int, float)):
            out[name] = item


def _cell(value):
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def csv_whole(campaign, data):
    """The CSV of ``ember export``, every counting row held at once."""
    counting = counting_rows_whole(data)
    ordered = [
        counting[policy["name"], (scenario["scenario_hash"], seed)]
        for policy in campaign["policies"]
        for scenario in campaign["scenarios"]
        for seed in sorted(scenario["seeds"])
        if (policy["name"], (scenario["scenario_hash"], seed)) in counting
    ]
    leaves = []
    for row in ordered:
        found = {}
        if row["metrics"] is not None:
            _leaves(row["metrics"], "", found)
        leaves.append(found)
    columns = sorted({name for found in leaves for name in found})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIXED_COLUMNS + tuple(columns))
    for row, found in zip(ordered, leaves):
        writer.writerow([_cell(row[c]) for c in FIXED_COLUMNS] + [_cell(found.get(c)) for c in columns])
    return out.getvalue().encode("utf-8")


class MatrixBand:
    """An evacuation band the batch way: every seed's curve in one matrix, reduced by numpy."""

    def __init__(self, views):
        self.views = views
        self.horizon = max(view.steps for view in views)

    def curves(self, horizon):
        import numpy as np

        shares = np.array([evacuation_curve(view, horizon) for view in self.views])
        return shares.min(axis=0), shares.mean(axis=0), shares.max(axis=0)


def plot_data_whole(campaign, data, policies):
    """The report's ``PlotData`` of ``policies``, every counting row held at once."""
    counting = counting_rows_whole(data)
    episodes, evacuation = {}, {}
    for scenario in campaign["scenarios"]:
        scenario_id, shash = scenario["scenario_id"], scenario["scenario_hash"]
        episodes[scenario_id], evacuation[scenario_id] = {}, {}
        for policy in policies:
            views = []
            for seed in scenario["seeds"]:
                metrics = counting[policy, (shash, seed)]["metrics"]
                views.append(EpisodeView(seed, EpisodeOutcome(metrics), metrics))
            episodes[scenario_id][policy] = views
            evacuation[scenario_id][policy] = MatrixBand(views)
    return PlotData(episodes, evacuation)
