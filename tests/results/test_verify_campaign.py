"""``ember verify DIR --campaign FILE`` checks the campaign too (campaign.md, Changed in 1.1).

Each attack is a results directory made for real by ``ember evaluate`` from
a campaign that is not the one it is shown with; every row in it verifies
against its own records.  The directory's scenarios (by hash) and seeds
must be exactly the campaign file's, and every policy of the file must be
in it with the same source and code: the first difference is exit 1,
naming its place.
"""

import json
import shutil
import sys

import pytest

from helpers.campaigns import EXAMPLE_AGENT, TINY, ember_cli

HEAD = 'campaign = "board"\nseeds = [0, 1]\nscenarios = ["floor.json"]\n'
GREEDY = '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
POLICIES = GREEDY + f'[[policies]]\nname = "agent"\nagent = "{sys.executable} agent.py"\n'
#: The same scenario ID as TINY, with the fire gone: an easier floor.
EASY = dict(TINY, fire=dict(TINY["fire"], ignitions=[]))


def _folder(path, scenario=TINY, text=HEAD + POLICIES):
    path.mkdir()
    (path / "floor.json").write_text(json.dumps(scenario))
    shutil.copy(EXAMPLE_AGENT, path / "agent.py")
    (path / "campaign.toml").write_text(text)
    return path / "campaign.toml"


def _evaluated(path, results):
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1", "--keep-records", "--sandbox", "off")
    assert done.returncode == 0, done.stderr
    return results


def _verify(results, campaign):
    return ember_cli("verify", results, "--campaign", campaign)


def _differs(done, results, campaign, place):
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.decode().splitlines()
    line = f"{results}/campaign.json: differs from the campaign file {campaign}: {place}"
    assert any(item.startswith(line) for item in out), out
    assert out[-1].endswith("; the campaign file: differs."), out
    assert done.stderr == b""
    return out


@pytest.fixture
def board(tmp_path):
    """The campaign file a board publishes, and an honest run of it."""
    campaign = _folder(tmp_path / "board")
    return campaign, _evaluated(campaign, tmp_path / "honest")


def test_the_campaigns_own_results_verify_against_it(board):
    campaign, results = board
    done = _verify(results, campaign)
    assert done.returncode == 0, done.stdout
    assert done.stdout.decode().splitlines()[-1] == (
        "ember verify: 4 verified, 0 mismatched, 0 unverifiable of 4 counting ok rows; "
        "ranking.json recomputed: identical."
    )


def test_results_of_an_easier_scenario_with_the_same_id_differ(board, tmp_path):
    campaign, _ = board
    results = _evaluated(_folder(tmp_path / "easy", scenario=EASY), tmp_path / "easy-results")
    easy = json.loads((results / "campaign.json").read_bytes())["scenarios"][0]["scenario_hash"]
    honest = json.loads((board[1] / "campaign.json").read_bytes())["scenarios"][0]["scenario_hash"]
    out = _differs(
        _verify(results, campaign),
        results,
        campaign,
        f"scenarios[0] (tiny): the campaign file's scenario hashes to {honest}, the directory's tiny to {easy}",
    )
    assert out[-1].startswith("ember verify: 4 verified, 0 mismatched")  # every row is true to its own records


def test_results_of_other_seeds_differ(board, tmp_path):
    campaign, _ = board
    other = _folder(tmp_path / "seeds", text=HEAD.replace("[0, 1]", "[0, 5]") + POLICIES)
    results = _evaluated(other, tmp_path / "seed-results")
    _differs(_verify(results, campaign), results, campaign, "scenarios[0] (tiny): seed 1 of the campaign file")
    fewer = _evaluated(_folder(tmp_path / "fewer", text=HEAD.replace("[0, 1]", "[0]") + POLICIES), tmp_path / "f")
    _differs(_verify(fewer, campaign), fewer, campaign, "scenarios[0] (tiny): seed 1 of the campaign file")
    more = _evaluated(_folder(tmp_path / "more", text=HEAD.replace("[0, 1]", "[0, 1, 2]") + POLICIES), tmp_path / "m")
    _differs(_verify(more, campaign), more, campaign, "scenarios[0] (tiny): the directory has seed 2")


def test_results_of_another_version_of_a_policy_differ(board, tmp_path):
    campaign, _ = board
    other = _folder(tmp_path / "v2")
    (other.parent / "agent.py").write_text("# v2\n" + (other.parent / "agent.py").read_text())
    results = _evaluated(other, tmp_path / "v2-results")
    _differs(_verify(results, campaign), results, campaign, "policies[1] (agent): code sha256:")


def test_results_without_a_policy_of_the_file_or_with_another_source_differ(board, tmp_path):
    campaign, _ = board
    alone = _evaluated(_folder(tmp_path / "alone", text=HEAD + GREEDY), tmp_path / "a")
    _differs(_verify(alone, campaign), alone, campaign, "policies[1] (agent) is not in the directory")
    swapped = _folder(tmp_path / "swapped", text=HEAD + POLICIES.replace('builtin = "greedy"', 'builtin = "stay"'))
    results = _evaluated(swapped, tmp_path / "s")
    _differs(_verify(results, campaign), results, campaign, 'policies[0] (greedy): builtin = "greedy" in the campaign')


def test_a_directory_made_before_1_1_verifies_alone_but_not_as_the_campaigns(board):
    """Without ``code`` (campaign.json before 1.1) nothing shows the rows came from the file's code."""
    campaign, results = board
    value = json.loads((results / "campaign.json").read_bytes())
    for policy in value["policies"]:
        policy.pop("code", None)
    (results / "campaign.json").write_bytes(
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    )
    shutil.rmtree(results / "code")
    alone = ember_cli("verify", results)
    assert alone.returncode == 0, alone.stdout
    _differs(_verify(results, campaign), results, campaign, "policies[1] (agent): the directory holds no code for it")
