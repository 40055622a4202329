"""statistics.json of the sorting bootstrap against the pairwise one it replaced, byte for byte, on random boards.

The boards are small (up to 7 policies, 1-3 scenarios of 1-5 seeds) with
small values, so that ties in (C*, S*, P*) inside replicates are common;
some policies are exact copies of others (tied in every resample), some
times are too wide to pack (C*, S*, P*) into one code, and some exposures
are wide (more than two limbs, the Python-integer path of X*).
"""

import contextlib
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember.stats import bootstrap, compute_statistics, statistics_bytes

from helpers import stats_pairwise
from helpers.stats_results import hand_results

histogram = st.dictionaries(
    st.sampled_from([1, 2, 3, 7, 10**6 + 3]),
    st.one_of(st.integers(0, 3), st.integers(2**60, 2**62)),
    max_size=3,
)
episode = st.fixed_dictionaries(
    {
        "casualties": st.integers(0, 2),
        "stranded": st.integers(0, 1),
        # Mostly small (ties, one packed int64 code); sometimes near 2^40 (three parts, too wide to pack).
        "time_to_safety": st.one_of(st.integers(0, 6), st.integers(2**40, 2**40 + 2)),
        "histogram": histogram,
    }
)


@st.composite
def boards(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    scenarios = [(f"s{h}", list(range(n))) for h, n in enumerate(sizes)]
    originals = [f"p{i}" for i in range(draw(st.integers(1, 5)))]
    copies = {f"copy{i}": draw(st.sampled_from(originals)) for i in range(draw(st.integers(0, 2)))}
    table = {(p, sid, seed): draw(episode) for p in originals for sid, seeds in scenarios for seed in seeds}
    for copy, original in copies.items():
        table.update({(copy, sid, seed): table[original, sid, seed] for sid, seeds in scenarios for seed in seeds})
    return scenarios, originals + sorted(copies), table


@contextlib.contextmanager
def pairwise_bootstrap():
    library = bootstrap.resample
    bootstrap.resample = stats_pairwise.resample_policy_major
    try:
        yield
    finally:
        bootstrap.resample = library


def both(results, replicates, seed):
    new = statistics_bytes(compute_statistics(results.campaign, results.episodes(), replicates, seed)[0])
    with pairwise_bootstrap():
        old = statistics_bytes(compute_statistics(results.campaign, results.episodes(), replicates, seed)[0])
    return new, old


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=boards(), replicates=st.integers(1000, 1100), seed=st.integers(0, 2**64 - 1))
def test_sorting_bootstrap_gives_the_pairwise_bytes(board, replicates, seed):
    scenarios, policies, table = board
    with tempfile.TemporaryDirectory() as directory:
        results = hand_results(
            directory, scenarios, policies, lambda p, sid, seed: {**table[p, sid, seed], "population": 4}
        )
        new, old = both(results, replicates, seed)
    assert new == old


def test_the_boards_reach_the_cases_they_are_for(tmp_path):
    """A copy ties in every replicate; wide exposures take the integer path of X*, narrow ones the float path."""
    scenarios = [("one", [0, 1, 2]), ("two", [0])]
    # x = 2^62 beside thirds (T >= 54): 2^62 over the common 2^T needs 116 bits, more than two limbs.
    wide = {1: 2**62}

    def metrics_of(policy, sid, seed):
        values = {"population": 4, "time_to_safety": 2, "casualties": seed % 2}
        values["histogram"] = wide if policy == "wide" else {3: 1 + seed}
        return values

    results = hand_results(tmp_path / "wide", scenarios, ["narrow", "narrow2", "wide"], metrics_of)
    narrow = hand_results(tmp_path / "narrow", scenarios, ["narrow", "narrow2"], metrics_of)
    limbs = []
    original = bootstrap.ExposureSums.apply

    def spy(self, counts):
        limbs.append(self.product.limbs)
        return original(self, counts)

    bootstrap.ExposureSums.apply = spy
    try:
        new, old = both(results, 1000, 3)
        assert new == old
        assert limbs and min(limbs) > 2  # the integer path ran
        limbs.clear()
        new, old = both(narrow, 1000, 3)
        assert new == old
        assert limbs and max(limbs) <= 2  # the float path ran
    finally:
        bootstrap.ExposureSums.apply = original
    statistics = compute_statistics(results.campaign, results.episodes(), 1000, 3)[0]
    ranks = {p["policy"]: p for p in statistics["policies"]}
    assert ranks["narrow"]["rank"] == ranks["narrow2"]["rank"]
    assert [p["order"]["equal"] for p in statistics["pairs"] if {p["above"], p["below"]} == {"narrow", "narrow2"}] == [
        1.0
    ]


@pytest.mark.parametrize("block_values", [1, 37, 1 << 21])
def test_blocks_by_policies_do_not_change_the_bytes(tmp_path, monkeypatch, block_values):
    """BLOCK_VALUES (replicates per block for many policies) is a memory knob only."""
    scenarios = [("one", [0, 1, 2, 3]), ("two", [0, 1])]

    def metrics_of(policy, sid, seed):
        return {"population": 4, "casualties": (seed + len(policy)) % 2, "time_to_safety": seed % 2}

    results = hand_results(tmp_path, scenarios, ["a", "bb", "cc", "d", "eee"], metrics_of)
    monkeypatch.setattr(bootstrap, "BLOCK_VALUES", block_values)
    new, old = both(results, 1003, 9)
    assert new == old
