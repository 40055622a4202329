"""The RL example (examples/rl_*.py): tuned through the environment, evaluated as a campaign python entry."""

import copy
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import ember
import ember.envs  # registers ember/Evacuation-v0

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def same(a, b):
    """Type-strict recursive equality: 1, 1.0 and True differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.fixture
def examples(monkeypatch):
    """The example modules, imported as a campaign imports a python entry: the campaign file's folder first."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    for name in ("rl_policy", "rl_train"):
        sys.modules.pop(name, None)
    yield importlib.import_module("rl_policy"), importlib.import_module("rl_train")
    for name in ("rl_policy", "rl_train"):
        sys.modules.pop(name, None)


def train_tiny(rl_train, out, seed=0):
    rl_train.main(
        [
            "--scenario",
            "builtin:small-room",
            "--iterations",
            "2",
            "--population",
            "3",
            "--elite",
            "2",
            "--episodes",
            "1",
            "--seed",
            str(seed),
            "-o",
            str(out),
        ]
    )
    return json.loads(out.read_text())


def test_training_with_a_tiny_budget_writes_weights(examples, tmp_path, capsys):
    rl_policy, rl_train = examples
    result = train_tiny(rl_train, tmp_path / "w.json")
    assert sorted(result["weights"]) == sorted(rl_policy.PARAMETERS)
    assert all(type(v) is float and np.isfinite(v) for v in result["weights"].values())
    assert result["weights"]["noise"] >= 0
    assert [h["iteration"] for h in result["history"]] == [0, 1]
    for h in result["history"]:
        assert len(h["scores"]) == 3 and h["best"] == max(h["scores"]) and h["incumbent"] == h["scores"][0]
        assert h["mean"] == pytest.approx(sum(h["scores"]) / 3, abs=1e-12)
    # The training is reproducible from its seed.
    assert train_tiny(rl_train, tmp_path / "again.json")["weights"] == result["weights"]
    assert rl_policy.load_weights(str(tmp_path / "w.json")) == result["weights"]


@pytest.mark.parametrize("scenario_name", ["builtin:small-room", "builtin:office"])
def test_the_policy_tuned_through_the_env_is_the_policy_evaluated(examples, tmp_path, scenario_name):
    """Same weights and seed: the env-driven episode and the campaign-form episode write the same record."""
    rl_policy, rl_train = examples
    scenario = ember.load_scenario(scenario_name)
    weights = dict(rl_policy.DEFAULT_WEIGHTS, noise=0.3, fire_near=-0.4)
    env = gymnasium.make("ember/Evacuation-v0", scenario=scenario, record=tmp_path / "env.record")
    returned = rl_train.play(env, scenario, weights, 12)
    env.close()
    out = io.BytesIO()
    ember.run_episode(scenario, rl_policy.LinearPolicy(copy.deepcopy(scenario), weights), 12, out)
    assert (tmp_path / "env.record").read_bytes() == out.getvalue()
    # play() trains on the env's reward: with the default one, evacuations minus casualties.
    safety = ember.episode_metrics(scenario, out.getvalue()).to_dict()["safety"]
    assert returned == pytest.approx(float(safety["evacuated"] - safety["casualties"]), abs=1e-9)


def test_python_entry_called_as_a_campaign_calls_it(examples, tmp_path, monkeypatch):
    rl_policy, rl_train = examples
    weights_file = tmp_path / "w.json"
    trained = train_tiny(rl_train, weights_file)
    monkeypatch.setenv("EMBER_RL_WEIGHTS", str(weights_file))
    campaign = tomllib.loads((EXAMPLES / "rl_campaign.toml").read_text())
    entry = next(p for p in campaign["policies"] if "python" in p)
    module_name, name = entry["python"].split(":")
    factory = getattr(importlib.import_module(module_name), name)
    for source in campaign["scenarios"][:2]:
        scenario = ember.load_scenario(source)
        fresh = copy.deepcopy(scenario)
        policy = factory(fresh)
        assert fresh == scenario  # the factory leaves the scenario copy alone
        assert policy.weights == [trained["weights"][f] for f in rl_policy.FEATURES]
        path = tmp_path / f"{scenario['scenario_id']}.record"
        ember.run_episode(scenario, policy, 0, path)
        assert ember.verify_replay(scenario, path) is None
        result = ember.episode_metrics(scenario, path).to_dict()
        assert result["safety"]["population"] == len(scenario["people"])
        assert result["safety"]["evacuated"] + result["safety"]["casualties"] + result["safety"]["stranded"] == len(
            scenario["people"]
        )


def test_campaign_file_follows_campaign_md(examples):
    campaign = tomllib.loads((EXAMPLES / "rl_campaign.toml").read_text())
    assert set(campaign) == {"campaign", "seeds", "scenarios", "policies"}
    assert campaign["seeds"] == {"start": 0, "count": 20}
    for source in campaign["scenarios"]:
        ember.load_scenario(source)
    sources = [next(k for k in ("builtin", "agent", "python", "records") if k in p) for p in campaign["policies"]]
    assert sources == ["python", "builtin", "builtin", "builtin"]
    assert len({p["name"] for p in campaign["policies"]}) == len(campaign["policies"])


def test_committed_weights_load(examples, monkeypatch):
    rl_policy, _ = examples
    monkeypatch.delenv("EMBER_RL_WEIGHTS", raising=False)
    committed = json.loads((EXAMPLES / "rl_weights.json").read_text())
    assert rl_policy.load_weights() == committed["weights"]
    assert committed["scenarios"] and committed["history"]


def test_committed_weights_beat_greedy_on_the_bottleneck(examples):
    """The tuned artifact does what the example claims, measured by the official metrics."""
    rl_policy, _ = examples
    scenario = ember.load_scenario("builtin:bottleneck")
    tuned = rl_policy.load_weights(rl_policy.WEIGHTS_FILE)
    evacuated = {"tuned": 0, "greedy": 0}
    for seed in (0, 1):
        for name, policy in (("tuned", rl_policy.LinearPolicy(scenario, tuned)), ("greedy", "greedy")):
            out = io.BytesIO()
            ember.run_episode(scenario, policy, seed, out)
            evacuated[name] += ember.episode_metrics(scenario, out.getvalue()).to_dict()["safety"]["evacuated"]
    assert evacuated["tuned"] > 2 * evacuated["greedy"], evacuated


def read_rows(results):
    return [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]


def tiny_campaign(folder, rl_train):
    """The example campaign with a tiny budget: its policy module, tiny-trained weights, two seeds, one scenario."""
    folder.mkdir()
    shutil.copy(EXAMPLES / "rl_policy.py", folder / "rl_policy.py")
    train_tiny(rl_train, folder / "rl_weights.json")  # make_policy reads the weights next to the module
    text = (EXAMPLES / "rl_campaign.toml").read_text()
    every_scenario = 'scenarios = ["builtin:small-room", "builtin:office", "builtin:bottleneck"]'
    small = text.replace("seeds = { start = 0, count = 20 }", "seeds = [0, 1]").replace(
        every_scenario, 'scenarios = ["builtin:small-room"]'
    )
    assert small.count("[0, 1]") == 1 and small.count('["builtin:small-room"]') == 1
    (folder / "rl_campaign.toml").write_text(small)
    return folder / "rl_campaign.toml"


def test_ember_evaluate_runs_the_example_campaign(examples, tmp_path, monkeypatch):
    rl_policy, rl_train = examples
    monkeypatch.delenv("EMBER_RL_WEIGHTS", raising=False)
    campaign = tiny_campaign(tmp_path / "campaign", rl_train)
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "EMBER_RL_WEIGHTS"}
    # The example policy reads its weights file beside it, which a sandbox shows no module: the developer's
    # own code, run as isolation.md's ``off`` mode is for.
    command = ["evaluate", str(campaign), "-o", str(results), "--workers", "1", "--sandbox", "off"]
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", *command],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = read_rows(results)
    assert sorted((r["policy"], r["seed"]) for r in rows) == sorted(
        (p, s) for p in ("rl-linear", "greedy", "random", "stay") for s in (0, 1)
    )
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    # The python entry's rows are exactly the metrics of the tuned policy's own episodes.
    scenario = ember.load_scenario("builtin:small-room")
    weights = rl_policy.load_weights(str(campaign.parent / "rl_weights.json"))
    for row in rows:
        if row["policy"] != "rl-linear":
            continue
        out = io.BytesIO()
        ember.run_episode(scenario, rl_policy.LinearPolicy(copy.deepcopy(scenario), weights), row["seed"], out)
        assert same(row["metrics"], ember.episode_metrics(scenario, out.getvalue()).to_dict())
        assert row["steps"] == row["metrics"]["time"]["episode_steps"]
    ranking = json.loads((results / "ranking.json").read_text())
    assert sorted(entry["policy"] for entry in ranking["ranked"]) == ["greedy", "random", "rl-linear", "stay"]
