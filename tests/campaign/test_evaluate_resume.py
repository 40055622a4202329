"""``ember evaluate`` on a results directory it wrote before (campaign.md §3): a resume.

What the campaign adds runs, nothing else reruns; failed rows rerun only
with ``--retry-failed``; a changed campaign or scenario is refused with
the first difference and the directory left as it was.
"""

import json
import shutil

import pytest

import ember

from helpers.campaigns import (
    BASIC,
    SMALL,
    TINY,
    assert_one_line_error,
    by_key,
    ember_cli,
    read_rows,
    snapshot,
    write_campaign,
)


def test_resume_adds_a_policy_and_seeds_and_reruns_nothing_else(basic_copy):
    path, results = basic_copy
    folder = path.parent
    before = (results / "episodes.jsonl").read_bytes()
    again = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert again.returncode == 0
    assert (results / "episodes.jsonl").read_bytes() == before  # nothing reruns
    (folder / "tiny2.json").write_text(json.dumps(dict(TINY, scenario_id="tiny2", termination={"max_steps": 7})))
    grown = BASIC.replace("seeds = [0, 1]", "seeds = [0, 1, 2]").replace(
        '"builtin:small-room"', '"tiny2.json", "builtin:small-room"'
    )
    grown += '\n[[policies]]\nname = "stay"\nbuiltin = "stay"\n'
    write_campaign(folder, grown)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    after = (results / "episodes.jsonl").read_bytes()
    assert after.startswith(before)
    rows = by_key(read_rows(results))
    # K: tiny2 x {0,1,2}, small-room x {0,1,2}, tiny x {4}; three policies.
    assert len(rows) == 7 * 3
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert [s["scenario_id"] for s in campaign["scenarios"]] == ["small-room", "tiny", "tiny2"]  # old ones first
    assert campaign["scenarios"][0]["seeds"] == [0, 1, 2]
    assert [p["name"] for p in campaign["policies"]] == ["greedy", "rnd", "stay"]


def test_retry_failed_reruns_failed_rows_only(tmp_path):
    folder = tmp_path / "c"
    path = write_campaign(
        folder,
        """
campaign = "retry"
seeds = [0, 1]
scenarios = ["builtin:small-room"]
[[policies]]
name = "greedy"
builtin = "greedy"
[[policies]]
name = "flaky"
python = "flaky:make"
""",
    )
    (folder / "flaky.py").write_text("raise ImportError('not yet')\n")
    # The module must import when the campaign is checked: make it import, then fail in the workers.  It
    # looks for a file beside it that the sandbox would not show it: this test runs without the sandbox.
    (folder / "flaky.py").write_text(
        "import os\nfrom ember.sim.policies import GreedyPolicy\n"
        "def make(scenario):\n    if not os.path.exists(os.path.join(os.path.dirname(__file__), 'ready')):\n"
        "        raise RuntimeError('not ready')\n    return GreedyPolicy(scenario)\n"
    )
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", "off").returncode == 0
    first = read_rows(results)
    assert sorted(r["status"] for r in first) == ["failed", "failed", "ok", "ok"]
    (folder / "ready").write_text("")
    assert ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", "off").returncode == 0
    assert read_rows(results) == first  # failed rows are final without --retry-failed
    assert (
        ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", "off", "--retry-failed").returncode
        == 0
    )
    rows = read_rows(results)
    assert rows[:4] == first and len(rows) == 6
    assert all(r["status"] == "ok" and r["policy"] == "flaky" for r in rows[4:])


CHANGES = [
    (
        "policy source",
        ('builtin = "random"', 'builtin = "stay"'),
        'policies[1] (rnd) is builtin = "random" there, builtin = "stay" now',
    ),
    ("campaign ID", ('campaign = "basic"', 'campaign = "other"'), "campaign is 'basic' there, 'other' now"),
    ("seed removed", ("seeds = [0, 1]", "seeds = [0]"), "scenarios[0] (small-room) lost seed 1"),
    (
        "policy removed",
        ('[[policies]]\nname = "rnd"\nbuiltin = "random"', ""),
        "policies[1] (rnd) is missing from the campaign file",
    ),
]


@pytest.mark.parametrize("case", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_changed_campaign_is_refused_with_the_first_difference(basic_copy, case):
    _, (old, new), difference = case
    path, results = basic_copy
    folder = path.parent
    before = snapshot(results)
    assert old in BASIC
    write_campaign(folder, BASIC.replace(old, new))
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results, "--workers", "2"))
    assert difference in line
    assert "campaign.json differs" in line
    assert snapshot(results) == before


def test_a_changed_scenario_content_is_refused_and_a_moved_one_is_not(tmp_path):
    folder = tmp_path / "c"
    scenario = ember.load_scenario(SMALL)
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "room.json").write_text(json.dumps(scenario))
    text = (
        'campaign = "files"\nseeds = [0]\nscenarios = ["a/room.json"]\n[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
    )
    path = write_campaign(folder, text)
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results).returncode == 0
    (folder / "b").mkdir()
    shutil.move(folder / "a" / "room.json", folder / "b" / "room.json")
    write_campaign(folder, text.replace("a/room.json", "b/room.json"))
    assert ember_cli("evaluate", path, "-o", results).returncode == 0  # same content, new place
    assert json.loads((results / "campaign.json").read_bytes())["scenarios"][0]["source"] == "b/room.json"
    scenario["termination"]["max_steps"] += 1
    (folder / "b" / "room.json").write_text(json.dumps(scenario))
    before = snapshot(results)
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
    assert "scenarios[0] (small-room) has content hash" in line
    assert snapshot(results) == before
