"""The results store in-process: resume merging (property), seeds.

The row checks it had are the results layer's now: tests/results/test_schema.py.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.campaign.spec import parse_seeds
from ember.campaign.store import merge_campaign
from ember.errors import CampaignError

VERSIONS = {"simulator": "1.0", "observation": "1.0", "metrics": "1.0", "ranking": "1.0", "package": "1.0.0"}


def campaign(scenarios, policies, name="c", versions=VERSIONS):
    return {
        "campaign": name,
        "versions": dict(versions),
        "scenarios": [
            {"scenario_id": sid, "scenario_hash": f"sha256:{sid}", "source": f"{sid}.json", "seeds": sorted(seeds)}
            for sid, seeds in scenarios
        ],
        "policies": [{"name": p, "builtin": "greedy"} for p in policies],
    }


names = st.lists(st.sampled_from("abcdefgh"), unique=True, min_size=1, max_size=5)
seed_sets = st.sets(st.integers(0, 20), min_size=1, max_size=5)


@given(old_ids=names, extra_ids=names, old_policies=names, extra_policies=names, data=st.data())
def test_a_resume_that_only_adds_keeps_the_old_first(old_ids, extra_ids, old_policies, extra_policies, data):
    old_seeds = {sid: data.draw(seed_sets) for sid in old_ids}
    added = {sid: data.draw(st.sets(st.integers(0, 20), max_size=3)) for sid in old_ids}
    new_ids = [sid for sid in extra_ids if sid not in old_ids]
    new_scenarios = [(sid, old_seeds[sid] | added[sid]) for sid in reversed(old_ids)]  # any order
    new_scenarios += [(sid, data.draw(seed_sets)) for sid in new_ids]
    new_policies = list(reversed(old_policies)) + [p for p in extra_policies if p not in old_policies]
    old = campaign([(sid, old_seeds[sid]) for sid in old_ids], old_policies)
    new = campaign(new_scenarios, new_policies)
    merged = merge_campaign(old, new, "campaign.json")
    assert [s["scenario_id"] for s in merged["scenarios"]] == old_ids + new_ids
    assert [p["name"] for p in merged["policies"]] == old_policies + [p for p in new_policies if p not in old_policies]
    for sc in merged["scenarios"][: len(old_ids)]:
        sid = sc["scenario_id"]
        assert sc["seeds"] == sorted(old_seeds[sid] | added[sid])


@given(ids=names, policies=names, data=st.data())
def test_dropping_anything_is_refused(ids, policies, data):
    seeds = {sid: data.draw(st.sets(st.integers(0, 20), min_size=2, max_size=5)) for sid in ids}
    old = campaign([(sid, seeds[sid]) for sid in ids], policies)
    what = data.draw(st.sampled_from(["seed", "scenario", "policy"]))
    victim = data.draw(st.sampled_from(ids if what != "policy" else policies))
    if what == "seed":
        dropped = min(seeds[victim])
        new = campaign([(sid, s - {dropped} if sid == victim else s) for sid, s in seeds.items()], policies)
        expected = f"lost seed {dropped}"
    elif what == "scenario":
        new = campaign([(sid, s) for sid, s in seeds.items() if sid != victim], policies)
        expected = f"({victim}) is missing from the campaign file"
    else:
        new = campaign(list(seeds.items()), [p for p in policies if p != victim])
        expected = f"({victim}) is missing from the campaign file"
    with pytest.raises(CampaignError, match="differs from the campaign file") as raised:
        merge_campaign(old, new, "campaign.json")
    assert expected in str(raised.value)


def test_versions_other_than_the_package_must_match():
    old = campaign([("a", {0})], ["p"])
    assert merge_campaign(old, campaign([("a", {0})], ["p"], versions=dict(VERSIONS, package="9.9")), "x")
    with pytest.raises(CampaignError, match="versions.metrics is '1.0' there, '2.0' now"):
        merge_campaign(old, campaign([("a", {0})], ["p"], versions=dict(VERSIONS, metrics="2.0")), "x")


@given(st.integers(0, 2**63 - 50), st.integers(1, 40))
def test_a_seed_table_is_the_range_it_names(start, count):
    assert parse_seeds({"start": start, "count": count}, "seeds") == list(range(start, start + count))
    assert parse_seeds(list(reversed(range(start, start + count))), "seeds") == list(range(start, start + count))


def test_seed_table_past_the_largest_seed():
    with pytest.raises(CampaignError, match="seeds: seeds .* go past the largest seed"):
        parse_seeds({"start": 2**63 - 2, "count": 5}, "seeds")
