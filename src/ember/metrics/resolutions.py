"""When and how each person resolved (evacuations and casualties)."""

from ..accumulator import Accumulator


class Resolutions(Accumulator):
    """Per person: resolution step, exit used and casualty cause (from the events)."""

    def __init__(self, scenario):
        self.index = scenario.person_index
        n = len(scenario.person_ids)
        self.step = [None] * n
        self.exit_id = [None] * n
        self.cause = [None] * n

    def update(self, tr):
        for event in tr.step["evacuations"]:
            i = self.index[event["person_id"]]
            self.step[i] = tr.t
            self.exit_id[i] = event["exit_id"]
        for event in tr.step["casualties"]:
            i = self.index[event["person_id"]]
            self.step[i] = tr.t
            self.cause[i] = event["cause"]
