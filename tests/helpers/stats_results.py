"""Results directories of hand-made metrics for the statistics tests."""

import hashlib

from helpers.ranking_results import ResultsDir, campaign_dict, failed_row, hand_metrics, ok_row


def scenario_hash_of(scenario_id):
    """A well-formed scenario hash (sha256:<64 hex>) standing for a hand-made scenario."""
    return "sha256:" + hashlib.sha256(scenario_id.encode()).hexdigest()


def hand_results(path, scenarios, policies, metrics_of, skip=(), fail=()):
    """A results directory of hand-made metrics.

    ``scenarios``: [(scenario_id, seeds)]; ``metrics_of(policy, scenario_id, seed)``
    gives ``hand_metrics`` keyword arguments; keys in ``skip`` get no row and
    keys in ``fail`` a failed row, as (policy, scenario_id, seed).
    """
    resolved = [(sid, scenario_hash_of(sid), f"{sid}.json", tuple(seeds)) for sid, seeds in scenarios]
    results = ResultsDir(path, campaign_dict("hand", resolved, [(p, "builtin", "greedy") for p in policies]))
    for policy in policies:
        for sid, seeds in scenarios:
            for seed in seeds:
                if (policy, sid, seed) in skip:
                    continue
                if (policy, sid, seed) in fail:
                    results.append(failed_row(policy, sid, scenario_hash_of(sid), seed))
                    continue
                metrics = hand_metrics(sid, scenario_hash_of(sid), seed, **metrics_of(policy, sid, seed))
                results.append(ok_row(policy, metrics))
    return results
