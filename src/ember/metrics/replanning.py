"""Reactions to blocked moves (metrics.md §10): proxies, not intent."""

from ..accumulator import Accumulator


class ReplanningCounts(Accumulator):
    def __init__(self, scenario):
        n = len(scenario.person_ids)
        self.pending = {}  # person -> action of its block at the previous step
        self.run = [0] * n
        self.longest = [0] * n
        self.with_next = 0
        self.moved_after = 0
        self.blocked_after = 0
        self.stayed_after = 0
        self.changed_after = 0

    def update(self, tr):
        actions = tr.step["actions"]
        pending, run, longest = self.pending, self.run, self.longest
        blocked_now = {}
        for i, move in zip(tr.movers, tr.step["movements"]):
            outcome = move["outcome"]
            if i in pending:
                # This decision is the next decision of the block at t - 1.
                self.with_next += 1
                if outcome == "moved":
                    self.moved_after += 1
                elif outcome == "stayed":
                    self.stayed_after += 1
                else:
                    self.blocked_after += 1
                if actions[move["person_id"]] != pending[i]:
                    self.changed_after += 1
            if outcome == "moved" or outcome == "stayed":
                run[i] = 0  # the action is looked up only where it is needed: most decisions are not blocked
            else:
                blocked_now[i] = actions[move["person_id"]]
                run[i] += 1
                if run[i] > longest[i]:
                    longest[i] = run[i]
        self.pending = blocked_now
