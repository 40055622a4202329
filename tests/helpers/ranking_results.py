"""Results directories (campaign.md §4) for ranking and report tests, without the campaign code.

Rows of built-in policies carry the real ``episode_metrics`` of short runs;
``hand_metrics`` makes a minimal metrics object for hand-computed cases.
"""

import functools
import io
import json
import os

from ember import episode_metrics, load_scenario, run_episode, scenario_hash
from ember.canonical import canonical_json_reference
from ember.scenario import compile_scenario
from ember.sim.policies import make_policy
from ember.versions import METRICS_VERSION, OBSERVATION_VERSION, RANKING_VERSION, SIMULATOR_VERSION


def canonical_line(value):
    return canonical_json_reference(value) + b"\n"


def campaign_dict(name, scenarios, policies):
    """campaign.json's content.

    ``scenarios``: [(scenario_id, hash, source, seeds)]; ``policies``: [(name, kind, value)].
    """
    entries = []
    for policy, kind, value in policies:
        entry = {"name": policy, kind: value}
        if kind in ("agent", "python"):
            entry["step_timeout"] = 10.0
        entries.append(entry)
    return {
        "campaign": name,
        "versions": {
            "simulator": SIMULATOR_VERSION,
            "observation": OBSERVATION_VERSION,
            "metrics": METRICS_VERSION,
            "ranking": RANKING_VERSION,
            "package": "1.0.0",
        },
        "scenarios": [
            {"scenario_id": sid, "scenario_hash": shash, "source": source, "seeds": sorted(seeds)}
            for sid, shash, source, seeds in scenarios
        ],
        "policies": entries,
    }


@functools.cache
def _builtin_metrics_json(source, policy, seed):
    scenario = compile_scenario(source)
    out = io.BytesIO()
    run_episode(scenario, make_policy(policy, scenario, seed), seed, out)
    return json.dumps(episode_metrics(load_scenario(source), out.getvalue()).to_dict())


def builtin_metrics(source, policy, seed):
    """The official metrics dict of ``ember run SOURCE --policy POLICY --seed SEED`` (cached, fresh copy)."""
    return json.loads(_builtin_metrics_json(source, policy, seed))


def ok_row(policy, metrics, elapsed_s=0.125):
    return {
        "scenario_id": metrics["scenario_id"],
        "scenario_hash": metrics["scenario_hash"],
        "seed": metrics["seed"],
        "policy": policy,
        "status": "ok",
        "error": None,
        "metrics": metrics,
        "steps": metrics["time"]["episode_steps"],
        "record": None,
        "record_sha256": None,
        "elapsed_s": elapsed_s,
    }


def failed_row(policy, scenario_id, shash, seed, error="agent exited with status 1"):
    return {
        "scenario_id": scenario_id,
        "scenario_hash": shash,
        "seed": seed,
        "policy": policy,
        "status": "failed",
        "error": error,
        "metrics": None,
        "steps": None,
        "record": None,
        "record_sha256": None,
        "elapsed_s": 0.5,
    }


def hand_metrics(
    scenario_id,
    shash,
    seed,
    *,
    casualties=0,
    stranded=0,
    evacuated=None,
    population=4,
    time_to_safety=0,
    histogram=None,
    evacuation_steps=None,
    exits=None,
):
    """A minimal metrics object with the fields ranking reads (plus a few the report draws)."""
    if evacuated is None:
        evacuated = population - casualties - stranded
    return {
        "metrics_version": METRICS_VERSION,
        "scenario_id": scenario_id,
        "scenario_hash": shash,
        "seed": seed,
        "safety": {"population": population, "evacuated": evacuated, "casualties": casualties, "stranded": stranded},
        "time": {
            "person_time_to_safety_total": time_to_safety,
            "max_steps": 100,
            "episode_steps": 50,
            "evacuation_steps": evacuation_steps or {},
        },
        "fire_exposure": {"distance_histogram": {str(d): n for d, n in (histogram or {}).items()}},
        "exits": {"evacuations_per_exit": exits or {}},
    }


class ResultsDir:
    """A results directory being written: campaign.json, then rows appended to episodes.jsonl."""

    def __init__(self, path, campaign):
        self.path = os.fspath(path)
        self.campaign = campaign
        os.makedirs(self.path, exist_ok=True)
        self.write_campaign()
        with open(self.episodes_path, "wb"):
            pass

    def write_campaign(self):
        """(Re)write campaign.json from ``self.campaign`` (after a test changed it)."""
        with open(os.path.join(self.path, "campaign.json"), "wb") as handle:
            handle.write(canonical_line(self.campaign))

    @property
    def episodes_path(self):
        return os.path.join(self.path, "episodes.jsonl")

    def append(self, *rows):
        with open(self.episodes_path, "ab") as handle:
            handle.writelines(canonical_line(row) if isinstance(row, dict) else row for row in rows)

    def episodes(self):
        with open(self.episodes_path, "rb") as handle:
            return handle.read()


def builtin_results(
    path, *, name="small-study", scenarios=(("builtin:small-room", (0, 1, 2)),), policies=("greedy", "random", "stay")
):
    """A finished campaign of built-in policies: one ok row per policy and episode, real metrics."""
    resolved = []
    for source, seeds in scenarios:
        scenario = load_scenario(source)
        resolved.append((scenario["scenario_id"], scenario_hash(scenario), source, tuple(seeds)))
    results = ResultsDir(path, campaign_dict(name, resolved, [(p, "builtin", p) for p in policies]))
    for policy in policies:
        for source, seeds in scenarios:
            for seed in seeds:
                results.append(ok_row(policy, builtin_metrics(source, policy, seed)))
    return results


def assert_same(actual, expected, path="$"):
    """Equal and of the same JSON types all the way down (1, 1.0 and True differ)."""
    assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
