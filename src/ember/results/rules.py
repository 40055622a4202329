"""Input rules a reader of a results directory may add to the schema: ``RowRules``, and statistics.md §1's.

``read_results(rules=...)`` asks them of campaign.json once and of every
checked row in file order; a reason they give is a ``ResultsError`` naming
the file and line, like a reason of the schema itself.
"""


class RowRules:
    """Further input rules a reader may add to the schema (statistics.md §1 has some).

    Subclass and override; each method returns None when the value passes,
    else the reason (a JSON path first, then expected and actual values),
    which the reader reports as a ``ResultsError`` naming the file and line.
    ``campaign`` is the checked ``CampaignJson``; ``row`` a checked ``Row``
    (its ``line`` set), ``value`` the parsed line.
    """

    def check_campaign(self, campaign):
        return None

    def check_row(self, row, value):
        return None


class StatisticsRules(RowRules):
    """statistics.md §1's input errors beyond ranking.md §1 (they cannot occur in what evaluate wrote).

    Seeds strictly ascending in ``campaign.json``; every ok row of one
    scenario hash with the same ``safety.population``.  (No episode key,
    two scenarios with one ID and a population of 0 are refused by the
    schema itself.)  One instance per read: it remembers populations.
    """

    def __init__(self):
        self.populations = {}  # scenario_hash -> (population, line)

    def check_campaign(self, campaign):
        for i, scenario in enumerate(campaign.value["scenarios"]):
            seeds = scenario["seeds"]
            for j in range(1, len(seeds)):
                if seeds[j] <= seeds[j - 1]:
                    return (
                        f"$.scenarios[{i}].seeds[{j}]: expected seeds in strictly ascending order, "
                        f"got {seeds[j]} after {seeds[j - 1]}"
                    )
        return None

    def check_row(self, row, value):
        if not row.ok:
            return None
        first = self.populations.setdefault(row.key[0], (row.episode.population, row.line))
        if first[0] != row.episode.population:
            return (
                f"$.metrics.safety.population: expected {first[0]}, the population of this scenario's ok row "
                f"on line {first[1]}, got {row.episode.population}"
            )
        return None
