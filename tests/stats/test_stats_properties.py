"""Properties of statistics 1.0 on generated campaigns (hypothesis): dominance, shares, coverage of the point."""

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember.stats import compute_statistics

from helpers.stats_results import hand_results

POPULATION = 10
episode = st.fixed_dictionaries(
    {
        "casualties": st.integers(0, 4),
        "stranded": st.integers(0, 4),
        "time_to_safety": st.integers(1, 60),
        "histogram": st.dictionaries(st.integers(1, 6), st.integers(0, 5), max_size=3),
    }
)
layout = st.lists(st.integers(1, 5), min_size=1, max_size=3)  # seeds per scenario


@st.composite
def campaigns(draw, policies):
    sizes = draw(layout)
    scenarios = [(f"s{h}", list(range(n))) for h, n in enumerate(sizes)]
    table = {(p, sid, seed): draw(episode) for p in policies for sid, seeds in scenarios for seed in seeds}
    return scenarios, table


def results_of(directory, scenarios, policies, table):
    def metrics_of(policy, sid, seed):
        return {**table[policy, sid, seed], "population": POPULATION}

    return hand_results(directory, scenarios, policies, metrics_of)


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=campaigns(("base",)), improvement=st.data())
def test_a_dominating_policy_is_separated_with_order_share_one(data, improvement):
    """Never worse in c, s and p on any episode and strictly faster on each: ahead in every resample."""
    scenarios, table = data
    for (_, sid, seed), values in list(table.items()):
        better = dict(values)
        better["casualties"] = values["casualties"] - improvement.draw(st.integers(0, values["casualties"]))
        better["stranded"] = values["stranded"] - improvement.draw(st.integers(0, values["stranded"]))
        better["time_to_safety"] = values["time_to_safety"] - improvement.draw(st.integers(1, values["time_to_safety"]))
        better["histogram"] = improvement.draw(episode)["histogram"]  # exposure may be anything
        table["better", sid, seed] = better
    with tempfile.TemporaryDirectory() as directory:
        results = results_of(directory, scenarios, ["base", "better"], table)
        statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 3)
    (pair,) = statistics["pairs"]
    assert (pair["above"], pair["below"]) == ("better", "base")
    assert pair["order"] == {"above": 1.0, "equal": 0.0, "below": 0.0}
    assert pair["separated"] is True
    assert [p["group"] for p in statistics["policies"]] == [1, 2]
    assert [p["rank_interval"] for p in statistics["policies"]] == [[1, 1], [2, 2]]
    assert [p["rank_share"] for p in statistics["policies"]] == [1.0, 1.0]
    assert pair["sign_test"]["above_better"] == sum(len(seeds) for _, seeds in scenarios)


@SETTINGS
@given(data=campaigns(("p", "q", "r")), replicates=st.integers(1000, 1100), seed=st.integers(0, 2**64 - 1))
def test_order_shares_sum_to_one(data, replicates, seed):
    scenarios, table = data
    with tempfile.TemporaryDirectory() as directory:
        results = results_of(directory, scenarios, ["p", "q", "r"], table)
        statistics, _ = compute_statistics(results.campaign, results.episodes(), replicates, seed)
    for pair in statistics["pairs"]:
        counts = [round(pair["order"][side] * replicates) for side in ("above", "equal", "below")]
        assert [count / replicates for count in counts] == [pair["order"][s] for s in ("above", "equal", "below")]
        assert sum(counts) == replicates
    for policy in statistics["policies"]:
        assert round(policy["rank_share"] * replicates) / replicates == policy["rank_share"]
    groups = [p["group"] for p in statistics["policies"]]
    assert groups[0] == 1 and all(b - a in (0, 1) for a, b in zip(groups, groups[1:]))
    assert groups[-1] == 1 + sum(pair["separated"] for pair in statistics["pairs"])


@SETTINGS
@given(data=campaigns(("p", "q")))
def test_intervals_contain_the_point_when_b_is_large(data):
    scenarios, table = data
    with tempfile.TemporaryDirectory() as directory:
        results = results_of(directory, scenarios, ["p", "q"], table)
        statistics, _ = compute_statistics(results.campaign, results.episodes(), 20_000, 11)

    def contains(entry, point="total"):
        low, high = entry["interval"]
        return low <= entry[point] <= high

    for policy in statistics["policies"]:
        for field in ("casualties", "stranded", "evacuated", "person_time_to_safety_total"):
            assert contains(policy[field]), (field, policy[field])
        for field in ("casualty_rate", "stranded_rate"):
            assert contains(policy[field], "value")
        for scenario in policy["by_scenario"].values():
            assert contains(scenario["casualties"])
        for field in ("episodes_with_casualties", "episodes_with_loss"):
            low, high = policy[field]["interval"]
            assert low <= policy[field]["count"] / policy[field]["of"] <= high
    for pair in statistics["pairs"]:
        for field in ("casualties_difference", "stranded_difference", "person_time_difference"):
            assert contains(pair[field], "value"), (field, pair[field])
