"""A local worker that runs built-in policies only pays for nothing the boundary needs (campaign/local_runner.py).

A real ``LocalRunner`` worker (spawned, so it holds only what it imported
itself) runs built-in episodes; it is then asked for its own ``sys.modules``.
Neither the watcher, the agent protocol, the sandbox nor the campaign
file's checks are loaded, and of the results directory only what writes a
row: those are loaded by the first agent or python episode, or by the
command, never by a built-in's worker.
"""

import concurrent.futures
import json

from ember.campaign.local_runner import LocalRunner
from ember.campaign.task import Task
from ember.scenario import load_scenario, scenario_hash

#: Modules only an agent or python episode, a submitted record or the command needs.
NOT_FOR_BUILTINS = (
    "ember.agent",
    "ember.campaign.campaign_file",
    "ember.campaign.code",
    "ember.campaign.episode_process",
    "ember.campaign.launchers",
    "ember.campaign.watch",
    "ember.results.bounds_file",
    "ember.results.counting",
    "ember.results.reader",
    "ember.results.writer",
)

MODULES = "sorted(m for m in __import__('sys').modules if m.startswith('ember'))"


def builtin_task(results, policy, seed):
    data = load_scenario("builtin:small-room")
    return Task(
        campaign="imports",
        policy={"name": policy, "builtin": policy},
        where="policies[0]",
        scenario=data,
        scenario_id=data["scenario_id"],
        scenario_hash=scenario_hash(data),
        seed=seed,
        folder=str(results),
        results=str(results),
        keep_records=False,
    )


def test_a_worker_running_builtin_policies_loads_nothing_of_the_boundary(tmp_path):
    runner = LocalRunner(1)
    try:
        futures = [
            runner.submit(builtin_task(tmp_path, policy, seed), None, 1)
            for seed in (0, 1)
            for policy in ("greedy", "random")
        ]
        concurrent.futures.wait(futures)
        outcomes = runner.outcomes(futures)
        assert [kind for _, kind, _ in outcomes] == ["row"] * 4, outcomes
        rows = [json.loads(value.line) for _, _, value in outcomes]
        assert {row["status"] for row in rows} == {"ok"}, rows
        loaded = runner._pool().submit(eval, MODULES).result(timeout=60)
    finally:
        runner.close()
    assert "ember.campaign.attempt" in loaded and "ember.engine.run" in loaded, loaded  # it did run them
    assert [name for name in loaded if name in NOT_FOR_BUILTINS or name.startswith("ember.isolation")] == []
