"""Decisions and their outcomes, per person (metrics.md §6–7)."""

from ..accumulator import Accumulator

# fmt: off
BLOCKED_OUTCOMES = (
    "blocked_boundary", "blocked_wall", "blocked_fire",
    "blocked_occupied", "blocked_conflict", "blocked_cycle",
)
# fmt: on
CONGESTION_OUTCOMES = ("blocked_occupied", "blocked_conflict", "blocked_cycle")


class MovementCounts(Accumulator):
    def __init__(self, scenario):
        n = len(scenario.person_ids)
        self.decisions = [0] * n
        self.stays = [0] * n
        self.moves = [0] * n  # cells_moved: every 'moved' is one 4-neighbour step
        self.blocked = [0] * n
        self.by_outcome = dict.fromkeys(BLOCKED_OUTCOMES, 0)

    def update(self, tr):
        decisions, stays, moves, blocked, by_outcome = (
            self.decisions,
            self.stays,
            self.moves,
            self.blocked,
            self.by_outcome,
        )
        for i, move in zip(tr.movers, tr.step["movements"]):
            decisions[i] += 1
            outcome = move["outcome"]
            if outcome == "moved":
                moves[i] += 1
            elif outcome == "stayed":
                stays[i] += 1
            else:
                blocked[i] += 1
                by_outcome[outcome] += 1
