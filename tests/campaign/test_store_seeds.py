"""A resume's seed union (campaign/resume.py ``merge_campaign``): one walk, the same as the set computation."""

import random

import pytest

from ember.campaign.resume import merge_campaign
from ember.errors import CampaignError

VERSIONS = {"simulator": "1", "observation": "1", "metrics": "1", "ranking": "1", "package": "x"}


def campaign(seeds):
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
            merge_campaign(campaign(old), campaign(new), "campaign.json")
        assert f"lost seed {lost[0]} (a resume may only add seeds)" in str(raised.value)
    else:
        merged = merge_campaign(campaign(old), campaign(new), "campaign.json")
        assert merged["scenarios"][0]["seeds"] == sorted(set(old) | set(new))
