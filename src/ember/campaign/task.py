"""``Task``: one attempt's orders, what a worker needs to run one (policy, episode) and make its row.

A task crosses process boundaries (a local worker's pickle, a Dask batch,
the JSON an episode process started afresh reads on stdin): it holds plain
values only, and ``as_dict`` / ``from_dict`` are its JSON form.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Task:
    """One attempt at one (policy, episode key) of a run.

    ``policy`` is the policy's campaign.json entry (``{"name", "builtin"}``,
    ...); ``where`` names it in the campaign file (``policies[3]``, for
    messages); ``scenario`` is the scenario's validated data; ``folder`` the
    campaign file's folder; ``results`` the results directory's absolute
    path; ``keep_records``: store the record (``--keep-records``).
    """

    campaign: str
    policy: dict
    where: str
    scenario: dict
    scenario_id: str
    scenario_hash: str
    seed: int
    folder: str
    results: str
    keep_records: bool

    @property
    def policy_name(self):
        return self.policy["name"]

    def row_fields(self):
        """The episode and policy fields of this task's row (``ember.results.rows``)."""
        return {
            "scenario_id": self.scenario_id,
            "scenario_hash": self.scenario_hash,
            "seed": self.seed,
            "policy": self.policy["name"],
        }

    def as_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, value):
        return cls(**value)
