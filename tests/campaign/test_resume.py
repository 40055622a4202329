"""A resumed campaign's comparison (campaign/resume.py ``merge_campaign``, campaign.md §3).

A resume may only add: the old scenarios and policies come first, a seed
union is the set computation, anything dropped or changed is refused.
"""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.campaign.resume import merge_campaign
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


def one_scenario(seeds):
    return {
        "campaign": "c",
        "versions": VERSIONS,
        "scenarios": [{"scenario_id": "s", "scenario_hash": "sha256:" + "1" * 64, "source": "s.json", "seeds": seeds}],
        "policies": [{"name": "g", "builtin": "greedy"}],
    }


@pytest.mark.parametrize("draw", range(200))
def test_the_union_and_the_lost_seed_are_the_set_computations(draw):
    chooser = random.Random(draw)
    old = chooser.sample(range(40), chooser.randrange(0, 15))
    new = chooser.sample(range(40), chooser.randrange(1, 15))
    if chooser.random() < 0.8:  # mostly as evaluate writes them: ascending
        old.sort()
        new.sort()
    lost = sorted(set(old) - set(new))
    if lost:
        with pytest.raises(CampaignError) as raised:
            merge_campaign(one_scenario(old), one_scenario(new), "campaign.json")
        assert f"lost seed {lost[0]} (a resume may only add seeds)" in str(raised.value)
    else:
        merged = merge_campaign(one_scenario(old), one_scenario(new), "campaign.json")
        assert merged["scenarios"][0]["seeds"] == sorted(set(old) | set(new))
