"""statistics.json against the direct, slow computation of the spec (stats_reference), on small campaigns."""

import json

import pytest

from ember.errors import ResultsError, StatisticsParameterError
from ember.ranking import compute_ranking
from ember.stats import bootstrap, compute_statistics, statistics_bytes

from helpers.ranking_results import builtin_results
from helpers.stats_reference import reference_statistics
from helpers.stats_results import hand_results
from helpers.strict import assert_same_json


def ties_inside_replicates(policy, sid, seed):
    # a and b: equal casualties and stranded everywhere; their times tie in some resamples only
    # (a: 1, 3, 5, 7 against b: 4, 4, 4, 4 on scenario one), exposure breaking those ties.
    times = {"a": [1, 3, 5, 7], "b": [4, 4, 4, 4], "c": [2, 2, 2, 2]}[policy]
    histogram = {"a": {2: 1 + seed}, "b": {3: 2 + seed}, "c": {1: 1}}[policy]
    if sid == "one":
        return {
            "casualties": 1 if policy == "c" and seed == 0 else 0,
            "time_to_safety": times[seed],
            "histogram": histogram,
        }
    return {
        "casualties": seed % 2,
        "stranded": 1 if policy == "c" else 0,
        "time_to_safety": 10 + seed,
        "histogram": histogram,
    }


def equal_policies(policy, sid, seed):
    if policy == "worse":
        return {"casualties": 2, "time_to_safety": 5}
    return {"casualties": seed % 2, "time_to_safety": 3 + seed, "histogram": {4: seed}}


def varied(policy, sid, seed):
    base = {"p": 0, "q": 1, "r": 2}[policy]
    return {
        "casualties": (seed + base) % 3,
        "stranded": (seed * base) % 2,
        "time_to_safety": 7 * seed + base * (seed % 3),
        "histogram": {1 + seed % 4: 1 + base, 5: seed},
    }


def rounded_exposure(policy, sid, seed):
    # Exact x differs (2^53 against 2^53 + 1) but float(x) is equal: ranked apart, tied in every resample.
    return {"time_to_safety": 10, "histogram": {1: 2**53 + (1 if policy == "b" else 0)}}


def fsum_matters(policy, sid, seed):
    # Per-episode x of 2^53 and 1: a plain float sum loses the ones, fsum (and the exact rounding) keeps them.
    values = {"a": {1: 2**53} if seed == 0 else {1: 1}, "b": {1: 2**53 + 2} if seed == 0 else {2: 1}}
    return {"time_to_safety": 10, "histogram": values[policy]}


def huge_times(policy, sid, seed):
    # Totals that need Python integers (|K| · max > 2^63) and values of two limbs.
    big = 2**62 if policy == "a" else 2**51 + 12345
    return {"time_to_safety": big - seed * 1000003 - (policy == "b") * 77, "casualties": seed % 2}


CASES = {
    "ties inside replicates": (
        [("one", [0, 1, 2, 3]), ("two", [0, 1, 2])],
        ["a", "b", "c"],
        ties_inside_replicates,
        {},
    ),
    "equal policies": ([("one", [0, 1, 2, 3, 4])], ["same1", "same2", "worse"], equal_policies, {}),
    "one ranked": (
        [("one", [0, 1, 2]), ("two", [5, 6])],
        ["p", "q", "r"],
        varied,
        {"skip": {("q", "two", 6)}, "fail": {("r", "one", 1)}},
    ),
    "none ranked": (
        [("one", [0, 1])],
        ["p", "q"],
        varied,
        {"skip": {("q", "one", 1)}, "fail": {("p", "one", 0)}},
    ),
    "single-seed scenarios": (
        [("one", [3]), ("two", [0]), ("three", [1, 2]), ("four", [9])],
        ["p", "q", "r"],
        varied,
        {},
    ),
    "unranked beside ranked": (
        [("one", [0, 1, 2, 3]), ("two", [1, 2, 3])],
        ["p", "q", "r"],
        varied,
        {"fail": {("q", "two", 2)}},
    ),
    "exposure equal after rounding": ([("one", [0, 1, 2])], ["a", "b"], rounded_exposure, {}),
    "fsum over repeated keys": ([("one", [0, 1, 2, 3])], ["a", "b"], fsum_matters, {}),
    "huge times": ([("one", [0, 1, 2]), ("two", [0, 1])], ["a", "b"], huge_times, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("replicates", "seed"), [(1000, 0), (1001, 12345)])
def test_statistics_match_the_direct_computation(tmp_path, case, replicates, seed):
    scenarios, policies, metrics_of, extra = CASES[case]
    results = hand_results(tmp_path, scenarios, policies, metrics_of, **extra)
    statistics, warnings = compute_statistics(results.campaign, results.episodes(), replicates, seed)
    assert warnings == []
    assert_same_json(statistics, reference_statistics(results.campaign, results.episodes(), replicates, seed))


def test_cases_cover_what_they_claim(tmp_path):
    """The hand-made cases really have ties in replicates, equal ranks, one and no ranked policy, wide totals."""
    found = {}
    for case, (scenarios, policies, metrics_of, extra) in CASES.items():
        results = hand_results(tmp_path / case.replace(" ", "-"), scenarios, policies, metrics_of, **extra)
        found[case] = compute_statistics(results.campaign, results.episodes(), 1000, 0)[0]
    ties = found["ties inside replicates"]["pairs"]
    assert any(0 < pair["order"]["equal"] < 1 or 0 < pair["order"]["above"] < 1 for pair in ties)
    same = found["equal policies"]
    assert [p["rank"] for p in same["policies"]] == [1, 1, 3]
    assert same["pairs"][0]["order"] == {"above": 0.0, "equal": 1.0, "below": 0.0}
    assert same["pairs"][0]["separated"] is False
    assert len(found["one ranked"]["policies"]) == 1 and found["one ranked"]["pairs"] == []
    assert found["one ranked"]["unranked"] == ["q", "r"]
    assert found["none ranked"]["policies"] == [] and found["none ranked"]["unranked"] == ["p", "q"]
    rounded = found["exposure equal after rounding"]
    assert [p["rank"] for p in rounded["policies"]] == [1, 2]
    assert rounded["policies"][1]["rank_interval"] == [1, 1] and rounded["policies"][1]["rank_share"] == 0.0
    assert rounded["pairs"][0]["order"]["equal"] == 1.0
    huge = found["huge times"]["policies"]
    assert max(p["person_time_to_safety_total"]["interval"][1] for p in huge) >= 2**63


def test_replicate_ties_are_broken_by_exposure(tmp_path):
    """In ``ties inside replicates`` some resamples tie a and b in (C*, S*, P*); exposure must have decided them."""
    scenarios, policies, metrics_of, extra = CASES["ties inside replicates"]
    results = hand_results(tmp_path, scenarios, policies, metrics_of, **extra)
    seen = []
    original = bootstrap.ExposureSums.apply

    def spy(self, counts):
        seen.append(counts.shape[1])  # keys × tied replicates
        return original(self, counts)

    bootstrap.ExposureSums.apply = spy
    try:
        compute_statistics(results.campaign, results.episodes(), 1000, 0)
    finally:
        bootstrap.ExposureSums.apply = original
    assert 0 < sum(seen) < 1000


def test_real_metrics_campaign(tmp_path):
    results = builtin_results(
        tmp_path, scenarios=(("builtin:small-room", (0, 1, 2, 3)), ("builtin:bottleneck", (0, 1)))
    )
    statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 7)
    assert_same_json(statistics, reference_statistics(results.campaign, results.episodes(), 1000, 7))


def test_point_values_are_the_rankings(tmp_path):
    results = builtin_results(tmp_path)
    statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 0)
    ranking, _ = compute_ranking(results.campaign, results.episodes())
    assert [(p["policy"], p["rank"]) for p in statistics["policies"]] == [
        (r["policy"], r["rank"]) for r in ranking["ranked"]
    ]
    for entry, ranked in zip(statistics["policies"], ranking["ranked"]):
        assert entry["casualties"]["total"] == ranked["casualties"]
        assert entry["casualty_rate"]["value"] == ranked["casualty_rate"]
        assert entry["stranded_rate"]["value"] == ranked["stranded_rate"]
    assert statistics["source"] == ranking["source"]
    for pair, ranked_pair in zip(statistics["pairs"], ranking["pairs"]):
        assert pair["sign_test"]["above_better"] == ranked_pair["above_better"]
        assert pair["sign_test"]["below_better"] == ranked_pair["below_better"]


@pytest.mark.parametrize("block_draws", [1, 7, 50, 1 << 20])
def test_blocks_do_not_change_the_result(tmp_path, monkeypatch, block_draws):
    """The block size is a memory knob only: one replicate per block or all in one give the same bytes."""
    scenarios, policies, metrics_of, extra = CASES["ties inside replicates"]
    results = hand_results(tmp_path, scenarios, policies, metrics_of, **extra)
    expected = statistics_bytes(compute_statistics(results.campaign, results.episodes(), 1003, 5)[0])
    monkeypatch.setattr(bootstrap, "BLOCK_DRAWS", block_draws)
    assert statistics_bytes(compute_statistics(results.campaign, results.episodes(), 1003, 5)[0]) == expected


def test_torn_line_warns_as_ranking_does(tmp_path):
    results = builtin_results(tmp_path)
    results.append(b'{"torn":')
    statistics, warnings = compute_statistics(results.campaign, results.episodes(), 1000, 0)
    assert warnings == compute_ranking(results.campaign, results.episodes())[1] and len(warnings) == 1
    assert_same_json(statistics, reference_statistics(results.campaign, results.episodes(), 1000, 0))


def test_bytes_are_canonical_json(tmp_path):
    results = builtin_results(tmp_path)
    statistics, _ = compute_statistics(results.campaign, results.episodes(), 1000, 0)
    data = statistics_bytes(statistics)
    assert data.endswith(b"}\n") and data.count(b"\n") == 1
    assert data == json.dumps(json.loads(data), sort_keys=True, separators=(",", ":")).encode() + b"\n"


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("replicates", [999, 1000001, 0, -5, True, False, 1000.0, "1000", None])
def test_bad_replicates(tmp_path, replicates):
    results = builtin_results(tmp_path)
    with pytest.raises(StatisticsParameterError, match=r"^replicates: expected an integer 1000 <= B <= 1000000, got "):
        compute_statistics(results.campaign, results.episodes(), replicates, 0)


@pytest.mark.parametrize("seed", [-1, 2**64, True, 1.0, "0", None])
def test_bad_seed(tmp_path, seed):
    results = builtin_results(tmp_path)
    with pytest.raises(StatisticsParameterError, match=r"^seed: expected an integer 0 <= seed < 2\^64, got "):
        compute_statistics(results.campaign, results.episodes(), 1000, seed)


@pytest.mark.parametrize(("replicates", "seed"), [(1000, 0), (1_000_000, 2**64 - 1)])
def test_extreme_parameters_are_accepted(replicates, seed):
    from ember.stats import check_replicates, check_seed

    assert check_replicates(replicates) == replicates and check_seed(seed) == seed


def test_seeds_not_ascending(tmp_path):
    results = hand_results(tmp_path, [("one", [0, 1]), ("two", [4, 2, 9])], ["p"], varied)
    results.campaign["scenarios"][1]["seeds"] = [4, 2, 9]
    results.write_campaign()
    with pytest.raises(ResultsError) as caught:
        compute_statistics(results.campaign, results.episodes(), 1000, 0)
    assert str(caught.value) == (
        "campaign.json: $.scenarios[1].seeds[1]: expected seeds in strictly ascending order, got 2 after 4"
    )
    compute_ranking(results.campaign, results.episodes())  # ranking has no such rule


def test_population_differs_within_a_scenario(tmp_path):
    def metrics_of(policy, sid, seed):
        return {"population": 5 if (policy, seed) == ("q", 1) else 4}

    results = hand_results(tmp_path, [("one", [0, 1])], ["p", "q"], metrics_of)
    with pytest.raises(ResultsError) as caught:
        compute_statistics(results.campaign, results.episodes(), 1000, 0)
    assert str(caught.value) == (
        "episodes.jsonl:4: $.metrics.safety.population: expected 4, the population of this scenario's ok row "
        "on line 1, got 5"
    )
    assert caught.value.file == "episodes.jsonl" and caught.value.line == 4


def test_population_of_an_unranked_policys_row_counts_too(tmp_path):
    def metrics_of(policy, sid, seed):
        return {"population": 6 if policy == "q" else 4}

    results = hand_results(tmp_path, [("one", [0, 1])], ["p", "q"], metrics_of, fail={("q", "one", 1)})
    with pytest.raises(ResultsError, match=r"^episodes\.jsonl:3: \$\.metrics\.safety\.population"):
        compute_statistics(results.campaign, results.episodes(), 1000, 0)


def test_ranking_input_errors_come_through(tmp_path):
    results = builtin_results(tmp_path)
    results.append(b"not json\n")
    with pytest.raises(ResultsError, match=r"^episodes\.jsonl:10: not a JSON text"):
        compute_statistics(results.campaign, results.episodes(), 1000, 0)


def test_parameters_are_checked_before_the_rows(tmp_path):
    results = builtin_results(tmp_path)
    results.append(b"not json\n")
    with pytest.raises(StatisticsParameterError):
        compute_statistics(results.campaign, results.episodes(), 10, 0)
