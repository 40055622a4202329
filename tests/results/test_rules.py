"""Input rules a reader adds (results/rules.py): statistics.md §1's, asked by the reader of every row."""

import pytest

from ember.errors import ResultsError
from ember.results import StatisticsRules, results_of_bytes

from helpers.ranking_results import canonical_line, hand_metrics, ok_row
from helpers.results_lines import H1, campaign, row


def test_statistics_rules_are_a_hook_of_the_reader():
    value = campaign(seeds=(0, 1))
    good = canonical_line(row(seed=0)) + canonical_line(row(seed=1))
    assert results_of_bytes(value, good, rules=StatisticsRules()).lines == 2
    descending = campaign(seeds=(0, 1))
    descending["scenarios"][0]["seeds"] = [1, 0]
    assert results_of_bytes(descending, b"").lines == 0  # ranking.md accepts any order of distinct seeds
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(descending, b"", rules=StatisticsRules())
    assert str(caught.value) == (
        "campaign.json: $.scenarios[0].seeds[1]: expected seeds in strictly ascending order, got 0 after 1"
    )
    other = ok_row("p", hand_metrics("a", H1, 1, population=5))
    data = canonical_line(row(seed=0)) + canonical_line(other)
    assert results_of_bytes(value, data).lines == 2
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(value, data, rules=StatisticsRules())
    assert str(caught.value) == (
        "episodes.jsonl:2: $.metrics.safety.population: expected 4, the population of this scenario's ok row "
        "on line 1, got 5"
    )
