"""What a run does: its tasks, made lazily from (scenario, seed, policy), and what it leaves.

Nothing here holds a task per episode: ``Plan.tasks()`` makes each task
when the driving loop asks for the next, so the command's memory does not
grow with the campaign beyond its seed lists (campaign.md §3 and the
``MAX_CAMPAIGN_RUNS`` cap of campaign_file.py).
"""

from .task import Task


class Plan:
    """The episodes of one run: every (policy, scenario, seed) of the resolved campaign still to run.

    ``last_status(key)`` gives the counting row's status of a key
    (``"ok"``, ``"failed"``) or None when it has no row; a key runs when it
    has no row, or a failed one and ``retry_failed``.
    """

    def __init__(self, campaign, resolved, last_status, retry_failed, results, keep_records, sandbox="required"):
        self.campaign = campaign
        self.resolved = resolved
        self.last_status = last_status
        self.retry_failed = retry_failed
        self.results = results
        self.keep_records = keep_records
        self.sandbox = sandbox
        # Where each policy is in the campaign file, for messages (policies[i].step_timeout).
        self.where = {policy["name"]: f"policies[{i}]" for i, policy in enumerate(campaign.policies)}

    def _runs(self, key):
        status = self.last_status(key)
        return status is None or (status == "failed" and self.retry_failed)

    def _keys(self):
        for sc in self.resolved["scenarios"]:
            for seed in sc["seeds"]:
                for policy in self.resolved["policies"]:
                    key = (policy["name"], sc["scenario_hash"], seed)
                    if self._runs(key):
                        yield key, sc, policy

    def count(self):
        """How many tasks ``tasks()`` yields (counted, not built)."""
        return sum(1 for _ in self._keys())

    def tasks(self):
        """(key, ``Task``) for every episode of this run, in scenario, seed, policy order, each made when asked."""
        data = {entry.scenario_id: entry.data for entry in self.campaign.scenarios}
        for key, sc, policy in self._keys():
            yield (
                key,
                Task(
                    campaign=self.resolved["campaign"],
                    policy=policy,
                    where=self.where[policy["name"]],
                    scenario=data[sc["scenario_id"]],
                    scenario_id=sc["scenario_id"],
                    scenario_hash=sc["scenario_hash"],
                    seed=key[2],
                    folder=self.campaign.folder,
                    results=self.results,
                    keep_records=self.keep_records,
                    sandbox=self.sandbox,
                ),
            )
