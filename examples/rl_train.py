#!/usr/bin/env python3
"""Tune the linear policy of rl_policy.py through ``ember/Evacuation-v0`` (cross-entropy method).

Needs the ``rl`` extra (gymnasium, numpy).  A few minutes on one CPU core:

    python examples/rl_train.py -o examples/rl_weights.json
    ember evaluate examples/rl_campaign.toml -o rl-results    # the official metrics, vs. the baselines

Each candidate weight vector plays the same training episodes (common random
numbers: the seeds of an iteration are shared, drawn apart from the campaign's
small evaluation seeds); its score is the mean return per person under the
environment's reward (+1 per evacuation, -1 per casualty, ``--step-reward``
per person and step), so small and large scenarios weigh alike.  The
elite's mean and spread make the next generation.  The reward is only the
training signal: the campaign ranks by the official metrics.
"""

import argparse
import json
import os
import sys

import gymnasium
import numpy as np

import ember
import ember.envs  # registers ember/Evacuation-v0

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rl_policy import ACTIONS, DEFAULT_WEIGHTS, PARAMETERS, LinearPolicy

CODES = {action: code for code, action in enumerate(ACTIONS)}
DEFAULT_SCENARIOS = ["builtin:bottleneck", "builtin:office", "builtin:small-room"]


def play(env, scenario, weights, seed):
    """One episode of the policy through the environment; returns its total reward."""
    policy = LinearPolicy(scenario, weights)
    ids = env.unwrapped.person_ids
    cols = scenario["grid"]["cols"]
    obs, _ = env.reset(seed=seed)
    total = 0.0
    while True:
        active = np.flatnonzero(obs["status"] == 0).tolist()
        burning = set(np.flatnonzero(obs["burning"].ravel()).tolist())
        rows_cols = obs["position"].tolist()
        people = [(ids[i], rows_cols[i][0] * cols + rows_cols[i][1]) for i in active]
        chosen = policy.choose(burning, people)
        codes = np.zeros(len(ids), dtype=np.int64)  # resolved people's codes are ignored
        for i in active:
            codes[i] = CODES[chosen[ids[i]]]
        obs, reward, terminated, truncated, _ = env.step(codes)
        total += reward
        if terminated or truncated:
            return total


def as_weights(vector):
    weights = dict(zip(PARAMETERS, (float(v) for v in vector)))
    weights["noise"] = abs(weights["noise"])
    return weights


def train(scenarios, iterations=8, population=10, elite=3, episodes=2, seed=0, step_reward=0.0, log=None):
    """Cross-entropy method over the policy's parameters; returns (weights, history)."""
    rng = np.random.default_rng(seed)
    envs = [
        (gymnasium.make("ember/Evacuation-v0", scenario=s, step_reward=step_reward), ember.load_scenario(s))
        for s in scenarios
    ]
    mean = np.array([DEFAULT_WEIGHTS[name] for name in PARAMETERS])
    spread = np.ones(len(PARAMETERS))
    history = []
    for iteration in range(iterations):
        seeds = rng.integers(1000, 2**63, size=episodes).tolist()
        candidates = mean + spread * rng.standard_normal((population, len(PARAMETERS)))
        candidates[0] = mean  # the current mean competes too
        scores = np.array(
            [
                np.mean(
                    [
                        play(env, scenario, as_weights(c), s) / len(scenario["people"])
                        for env, scenario in envs
                        for s in seeds
                    ]
                )
                for c in candidates
            ]
        )
        best = candidates[np.argsort(scores)[::-1][:elite]]
        mean = best.mean(axis=0)
        spread = best.std(axis=0) + 0.1 * 0.7**iteration  # extra spread, decaying: no early collapse
        history.append(
            {
                "iteration": iteration,
                "best": float(scores.max()),
                "mean": float(scores.mean()),
                "incumbent": float(scores[0]),
                "scores": scores.tolist(),
            }
        )
        if log:
            log(f"iteration {iteration}: best {scores.max():.3f}  mean {scores.mean():.3f}  incumbent {scores[0]:.3f}")
    for env, _ in envs:
        env.close()
    return as_weights(mean), history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--scenario", action="append", help=f"training scenario (repeatable; default {', '.join(DEFAULT_SCENARIOS)})"
    )
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--population", type=int, default=10)
    parser.add_argument("--elite", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2, help="training episodes per candidate and scenario")
    parser.add_argument("--seed", type=int, default=0, help="the training's own seed")
    parser.add_argument("--step-reward", type=float, default=0.0)
    parser.add_argument("-o", "--output", default="rl_weights.json", help="weights file (JSON) to write")
    args = parser.parse_args(argv)
    scenarios = args.scenario or DEFAULT_SCENARIOS
    weights, history = train(
        scenarios,
        args.iterations,
        args.population,
        args.elite,
        args.episodes,
        args.seed,
        args.step_reward,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    result = {
        "weights": weights,
        "scenarios": scenarios,
        "seed": args.seed,
        "step_reward": args.step_reward,
        "history": history,
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(weights))


if __name__ == "__main__":
    main()
