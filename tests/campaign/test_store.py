"""The results store: resume merging (property), seeds, resume and torn lines.

The row checks it had are the results layer's now: tests/results/test_schema.py.
"""

import json
import os
import shutil
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.campaign.campaign_file import parse_seeds
from ember.campaign.resume import merge_campaign
from ember.errors import CampaignError

from helpers.campaigns import (
    BASIC,
    EXAMPLE_AGENT,
    SMALL,
    TINY,
    assert_one_line_error,
    by_key,
    ember_cli,
    read_rows,
    snapshot,
    without_timing,
    write_campaign,
)

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


# -- resume ---------------------------------------------------------------------------


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
    # looks for a file beside it that the sandbox would not show it: this test of the store runs without one.
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


def test_a_torn_last_line_is_set_aside_with_a_warning(basic_copy):
    path, results = basic_copy
    rows = read_rows(results)
    # Simulate a crash mid-write: the last row lost, half of it on disk.
    full = (results / "episodes.jsonl").read_bytes()
    last = full[:-1].rsplit(b"\n", 1)[1] + b"\n"
    torn = last[: len(last) // 2]
    (results / "episodes.jsonl").write_bytes(full[: -len(last)] + torn)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "torn last line" in done.stderr.decode() and "episodes.jsonl.torn" in done.stderr.decode()
    assert (results / "episodes.jsonl.torn").read_bytes() == torn
    after = read_rows(results)
    assert after[:-1] == rows[:-1]
    assert without_timing(after) == without_timing(rows)  # the lost row was run again, once


def test_a_line_that_is_not_a_row_is_refused(basic_copy):
    path, results = basic_copy
    with open(results / "episodes.jsonl", "ab") as handle:
        handle.write(b'{"not": "a row"}\n')
    before = snapshot(results)
    line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
    assert "episodes.jsonl:7: $: a row has exactly the keys" in line  # the one schema (ember.results)
    assert snapshot(results) == before


def test_one_writer_per_results_directory(tmp_path):
    import fcntl

    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    results.mkdir()
    fd = os.open(results, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running 'ember evaluate' holds it
        line = assert_one_line_error(ember_cli("evaluate", path, "-o", results))
        assert "locked" in line
        assert snapshot(results) == {}
    finally:
        os.close(fd)
    assert ember_cli("evaluate", path, "-o", results).returncode == 0


def test_float_spelling_in_campaign_json_and_rows_is_json_dumps(tmp_path):
    """Regression: orjson writes 0.00005 where campaign.md §4 (json.dumps) requires 5e-05."""
    (tmp_path / "c").mkdir()
    shutil.copy(EXAMPLE_AGENT, tmp_path / "c" / "greedy_agent.py")  # the agent's file is in its campaign folder
    path = write_campaign(
        tmp_path / "c",
        f"""
campaign = "floats"
seeds = [0]
scenarios = ["builtin:small-room"]
[[policies]]
name = "greedy"
builtin = "greedy"
[[policies]]
name = "hasty"
agent = "{sys.executable} greedy_agent.py"
step_timeout = 5e-05
""",
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "res" / "campaign.json").read_bytes()
    assert b'"step_timeout":5e-05' in text
    lines = [text[:-1], *(tmp_path / "res" / "episodes.jsonl").read_bytes().splitlines()]
    assert len(lines) == 3
    for line in lines:
        reference = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert line == reference


def test_a_run_removes_a_stale_statistics_json_as_it_does_ranking_json(basic_copy):
    """statistics.json (ember stats -o) describes the rows of the last run: evaluate drops it at the start."""
    path, results = basic_copy
    stats = ember_cli("stats", results, "--replicates", "1000", "-o", results / "statistics.json")
    assert stats.returncode == 0, stats.stderr
    (results / "ranking.json").write_bytes(b"stale\n")
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert not (results / "statistics.json").exists()
    assert (results / "ranking.json").read_bytes() == ember_cli("rank", results).stdout  # written anew
