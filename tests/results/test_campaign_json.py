"""campaign.json checked (results/campaign_json.py ``CampaignJson``, campaign.md §4): its shape, K, P."""

import array
import sys

import pytest

from ember.results import check_campaign, results_of_bytes

from helpers.ranking_results import campaign_dict
from helpers.results_lines import H1, H2, campaign, refused


def test_campaign_json_keeps_its_seeds_in_an_array_not_the_files_int_objects():
    """8 bytes a seed, and no reference to the parsed file's ints: without ``value`` they go (a resume's table)."""
    value = campaign(seeds=(7, 3, 2**63 - 1, 0, 10**12))
    seeds = value["scenarios"][0]["seeds"]
    big = seeds[-2:]  # ints no cache shares (10^12, 2^63 - 1): their reference counts are the file's alone
    counts = [sys.getrefcount(seed) for seed in big]
    checked = check_campaign(value)
    scenario_id, kept = checked.scenarios[H1]
    assert scenario_id == "a" and isinstance(kept, array.array) and kept.typecode == "q"
    assert list(kept) == seeds == [0, 3, 7, 10**12, 2**63 - 1]
    assert [sys.getrefcount(seed) for seed in big] == counts  # a tuple would hold each once more
    assert list(checked.keys) == [(H1, seed) for seed in seeds] and len(checked.keys) == 5
    assert (H1, 2**63 - 1) in checked.keys and (H1, 5) not in checked.keys and (H2, 0) not in checked.keys
    assert [checked.keys.members[H1].position(seed) for seed in (0, 7, 2**63 - 1, 5)] == [0, 2, 4, None]


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda c: c["policies"][0].update(kind="x"),
            '$.policies[0]: unknown key "kind" (expected only name, builtin)',
        ),
        (lambda c: c["scenarios"][0].pop("source"), "$.scenarios[0]: missing key 'source'"),
        (lambda c: c["scenarios"][0].update(source=1), "$.scenarios[0].source: expected a string, got 1"),
        (
            lambda c: c["versions"].update(extra="1"),
            '$.versions: unknown key "extra" (expected only metrics, ranking, simulator, observation, package)',
        ),
        (lambda c: c["versions"].update(simulator=1), "$.versions.simulator: expected a string, got 1"),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2}),
            "$.policies[1].step_timeout: expected a number > 0 written as a float, got 2",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "python": "m:f"}),
            "$.policies[1]: missing key 'step_timeout'",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "records": 3}),
            "$.policies[1].records: expected a string, got 3",
        ),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2.0, "code": "sha256:AB"}),
            '$.policies[1].code: expected sha256:<64 hex>, got "sha256:AB"',
        ),
        (
            lambda c: c["policies"].append({"name": "a", "agent": "x", "step_timeout": 2.0, "code": 7}),
            "$.policies[1].code: expected a string, got 7",
        ),
        (
            lambda c: c["policies"][0].update(code="sha256:" + "0" * 64),
            '$.policies[0]: unknown key "code" (expected only name, builtin)',
        ),
    ],
)
def test_campaign_json_has_exactly_its_shape(change, message):
    value = campaign()
    change(value)
    error = refused(value)
    assert (error.file, error.line) == ("campaign.json", None)
    assert str(error) == f"campaign.json: {message}"


def test_a_policy_of_every_kind_is_read():
    value = campaign_dict(
        "c",
        [("a", H1, "a.json", (0,))],
        [("b", "builtin", "greedy"), ("g", "agent", "python3 a.py"), ("y", "python", "m:f"), ("r", "records", "subs")],
    )
    results = results_of_bytes(value, b"")
    assert results.campaign.policies == {"b": "builtin", "g": "agent", "y": "python", "r": "records"}


def test_an_agent_or_python_policy_is_read_with_its_code_and_without_it():
    """campaign.md 1.1: ``code`` for agent and python policies; a campaign.json made before 1.1 has none."""
    code = "sha256:" + "0123456789abcdef" * 4
    value = campaign_dict(
        "c",
        [("a", H1, "a.json", (0,))],
        [("g", "agent", "python3 a.py"), ("y", "python", "m:f"), ("old", "agent", "python3 b.py")],
    )
    value["policies"][0]["code"] = code
    value["policies"][1]["code"] = code
    results = results_of_bytes(value, b"")
    assert results.campaign.policies == {"g": "agent", "y": "python", "old": "agent"}
    assert results.campaign.value["policies"][0]["code"] == code
