"""The distance to the possible (bounds.md §5): a group of ok rows summed against their keys' bounds.

Avoidable casualties (Σ casualties − Σ casualties_min) and evacuated of
possible (Σ evacuated / Σ evacuated_max), per policy and per policy and
scenario, over the rows whose key has bounds (``results.bounds_file``); an
episode whose bounds are null is left out of the four sums and counted as
"no bound".  Nothing here changes ``ranking.json`` or ``statistics.json``.
"""

_NO_BOUND = "—"


class Distance:
    """The distance to the possible of a group of ok rows (one policy, or one policy on one scenario)."""

    __slots__ = ("casualties", "casualties_min", "counted", "evacuated", "evacuated_max", "no_bound")

    def __init__(self):
        self.casualties = self.casualties_min = self.evacuated = self.evacuated_max = 0
        self.counted = self.no_bound = 0

    def add(self, outcome, bounds):
        """Count one ok row's ``EpisodeOutcome`` against its key's ``KeyBounds``."""
        if bounds.evacuated_max is None:
            self.no_bound += 1
            return
        self.counted += 1
        self.casualties += outcome.casualties
        self.casualties_min += bounds.casualties_min
        self.evacuated += outcome.evacuated
        self.evacuated_max += bounds.evacuated_max

    @property
    def avoidable_casualties(self):
        """Σ casualties − Σ casualties_min over the rows with bounds."""
        return self.casualties - self.casualties_min

    def evacuated_text(self):
        """``E/M (p%)``, p rounded half up to one decimal in exact arithmetic; ``—`` when M = 0."""
        if self.evacuated_max == 0:
            return _NO_BOUND
        tenths = (2000 * self.evacuated + self.evacuated_max) // (2 * self.evacuated_max)
        return f"{self.evacuated}/{self.evacuated_max} ({tenths // 10}.{tenths % 10}%)"

    def avoidable_text(self):
        """The avoidable casualties, or ``—`` when no row had a bound."""
        return str(self.avoidable_casualties) if self.counted else _NO_BOUND

    def note(self):
        """``", N without a bound"`` when some rows had null bounds, else ``""``."""
        return f", {self.no_bound} without a bound" if self.no_bound else ""


class Distances:
    """The distances of a results directory's ok rows: ``policy`` {policy: Distance} and ``scenario``
    {(policy, scenario_id): Distance}, in the order of their first ok row."""

    def __init__(self, ok_rows, bounds):
        self.policy, self.scenario = {}, {}
        for row in ok_rows.rows():
            episode_bounds = bounds[row.key]
            for table, group in ((self.policy, row.policy), (self.scenario, (row.policy, row.scenario_id))):
                distance = table.get(group)
                if distance is None:
                    distance = table[group] = Distance()
                distance.add(row.episode, episode_bounds)

    @property
    def no_bound(self):
        """The ok rows whose key has no bound (bounds.md §3's limit)."""
        return sum(distance.no_bound for distance in self.policy.values())
