"""The campaign file (ember.campaign.campaign_file, campaign.md §2): bad files refused before anything runs."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.campaign.campaign_file import parse_seeds
from ember.errors import CampaignError

from helpers.campaigns import GOOD_POLICY, HEAD, in_process, write_campaign

# -- bad input ----------------------------------------------------------------------------

BAD = [
    ("not TOML", "campaign = \n", "not valid TOML"),
    (
        "missing campaign",
        'seeds = [0]\nscenarios = ["builtin:small-room"]\n' + GOOD_POLICY,
        "missing required key 'campaign'",
    ),
    ("unknown top key", HEAD + "colour = 1\n" + GOOD_POLICY, "colour: unknown key"),
    ("bad ID", HEAD.replace('"bad"', '"bad id"') + GOOD_POLICY, "campaign: expected an ID"),
    ("seed out of range", HEAD.replace("[0]", "[-1]") + GOOD_POLICY, "seeds[0]: expected an integer from 0"),
    ("duplicate seeds", HEAD.replace("[0]", "[3, 3]") + GOOD_POLICY, "seeds[1]: seed 3 is listed twice"),
    ("empty seeds", HEAD.replace("[0]", "[]") + GOOD_POLICY, "seeds: expected a non-empty array"),
    ("seed table", HEAD.replace("[0]", "{ start = 0 }") + GOOD_POLICY, "seeds: missing required key 'count'"),
    ("seed is a float", HEAD.replace("[0]", "[1.5]") + GOOD_POLICY, "seeds[0]: expected an integer"),
    ("no seeds", 'campaign = "bad"\nscenarios = ["builtin:small-room"]\n' + GOOD_POLICY, "scenarios[0]: no seeds"),
    (
        "empty scenarios",
        HEAD.replace('["builtin:small-room"]', "[]") + GOOD_POLICY,
        "scenarios: expected a non-empty array",
    ),
    (
        "bad scenario",
        HEAD.replace("builtin:small-room", "nowhere.json") + GOOD_POLICY,
        "scenarios[0]: scenario 'nowhere.json'",
    ),
    ("unknown builtin scenario", HEAD.replace("small-room", "moon") + GOOD_POLICY, "scenarios[0]"),
    (
        "repeated scenario",
        HEAD.replace('["builtin:small-room"]', '["builtin:small-room", { source = "builtin:small-room" }]')
        + GOOD_POLICY,
        "scenarios[1]: the scenario's content hash repeats scenarios[0]",
    ),
    (
        "scenario table key",
        HEAD.replace('["builtin:small-room"]', '[{ source = "builtin:small-room", seed = 1 }]') + GOOD_POLICY,
        "scenarios[0].seed: unknown key",
    ),
    ("no policies", HEAD, "missing required key 'policies'"),
    ("duplicate policy", HEAD + GOOD_POLICY + GOOD_POLICY, "policies[1].name: policy name 'g' is also policies[0]'s"),
    (
        "two sources",
        HEAD + '[[policies]]\nname = "g"\nbuiltin = "greedy"\nagent = "x"\n',
        "policies[0]: expected exactly one source",
    ),
    ("no source", HEAD + '[[policies]]\nname = "g"\n', "policies[0]: expected exactly one source"),
    (
        "unknown builtin",
        HEAD + '[[policies]]\nname = "g"\nbuiltin = "smart"\n',
        "policies[0].builtin: unknown built-in policy 'smart'",
    ),
    ("bad policy name", HEAD + '[[policies]]\nname = "-g"\nbuiltin = "greedy"\n', "policies[0].name: expected an ID"),
    (
        "missing records",
        HEAD + '[[policies]]\nname = "r"\nrecords = "nowhere"\n',
        "policies[0].records: folder 'nowhere' does not exist",
    ),
    (
        "python import",
        HEAD + '[[policies]]\nname = "p"\npython = "no_such_module_x:make"\n',
        "policies[0].python: module 'no_such_module_x' does not import",
    ),
    (
        "python name",
        HEAD + '[[policies]]\nname = "p"\npython = "campaign_hooks:nothing"\n',
        "policies[0].python: module 'campaign_hooks' has no attribute 'nothing'",
    ),
    (
        "python syntax",
        HEAD + '[[policies]]\nname = "p"\npython = "broken:make"\n',
        "policies[0].python: module 'broken' does not import: SyntaxError",
    ),
    ("empty agent", HEAD + '[[policies]]\nname = "a"\nagent = "  "\n', "policies[0].agent: the agent command is empty"),
    (
        "unsplittable agent",
        HEAD + '[[policies]]\nname = "a"\nagent = "python3 \\"x"\n',
        "policies[0].agent: cannot split",
    ),
    (
        "timeout with builtin",
        HEAD + GOOD_POLICY + "step_timeout = 2\n",
        "policies[0].step_timeout: step_timeout applies only",
    ),
    (
        "zero timeout",
        HEAD + '[[policies]]\nname = "a"\nagent = "x"\nstep_timeout = 0\n',
        "policies[0].step_timeout: expected a finite number",
    ),
    (
        "infinite timeout",
        HEAD + '[[policies]]\nname = "a"\nagent = "x"\nstep_timeout = inf\n',
        "policies[0].step_timeout: expected a finite number",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_campaign_files(tmp_path, case):
    _, text, expected = case
    folder = tmp_path / "c"
    path = write_campaign(folder, text, hooks=True)
    (folder / "broken.py").write_text("def make(:\n")
    results = tmp_path / "res"
    from ember.cli import main

    done = in_process(main, ["evaluate", str(path), "-o", str(results)])
    assert done[0] == 2
    assert done[1] == ""
    lines = done[2].splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ember: {path}: "), lines
    assert expected in lines[0]
    assert not results.exists()


# -- seed tables --------------------------------------------------------------------------


@given(st.integers(0, 2**63 - 50), st.integers(1, 40))
def test_a_seed_table_is_the_range_it_names(start, count):
    assert parse_seeds({"start": start, "count": count}, "seeds") == list(range(start, start + count))
    assert parse_seeds(list(reversed(range(start, start + count))), "seeds") == list(range(start, start + count))


def test_seed_table_past_the_largest_seed():
    with pytest.raises(CampaignError, match="seeds: seeds .* go past the largest seed"):
        parse_seeds({"start": 2**63 - 2, "count": 5}, "seeds")
