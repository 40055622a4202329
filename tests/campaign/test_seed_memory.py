"""A run holds its seeds compactly (campaign/seeds.py): no Python list of a scenario's seeds while episodes run.

A campaign of 10^6 seeds held as lists costs a Python int and a list slot
per seed, once for the campaign file and again for campaign.json on a
resume; the run keeps a ``range`` (consecutive seeds) or an
``array('q')`` instead, merges them as such and writes campaign.json's
bytes from them (docs/campaigns.md, "Bounded memory").
"""

import array
import gc
import json

import pytest

from ember.campaign import driver, evaluate
from ember.campaign.resume import merge_campaign
from ember.campaign.seeds import compact_seeds
from ember.canonical import canonical_json_reference
from ember.results.rows import failed_row
from ember.results.writer import campaign_bytes

from helpers.campaigns import read_rows, write_campaign

SEEDS = 3000  # far more than any other list a run holds


def campaign_text(seeds):
    return (
        f'campaign = "compact"\nseeds = {seeds}\nscenarios = ["builtin:small-room"]\n'
        '[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
    )


class SeedListWatcher:
    """Answers each attempt at once with a small failed row; at its first submit, lists what lists of the
    campaign's seeds (SEEDS ints or more) the process holds."""

    window = 4

    def __init__(self):
        self.tasks, self.count, self.seed_lists = {}, 0, None

    def submit(self, task, key, attempt):
        if self.seed_lists is None:
            gc.collect()
            self.seed_lists = [
                len(value)
                for value in gc.get_objects()
                if type(value) is list and len(value) >= SEEDS and all(type(item) is int for item in value[:10])
            ]
        self.count += 1
        self.tasks[self.count] = task
        return self.count

    def wait(self, futures):
        return list(futures)

    def outcomes(self, done):
        return [(f, "row", failed_row(**self.tasks.pop(f).row_fields(), error="instant")) for f in done]

    def close(self, terminate=False):
        pass

    def check_sandbox(self, files):
        pass


def seed_texts(kind):
    """(first run's seeds, the resume's seeds) as campaign-file text: consecutive, or listed every other one."""
    if kind == "consecutive":
        return f"{{ start = 0, count = {SEEDS // 2} }}", f"{{ start = 0, count = {SEEDS} }}"
    return str(list(range(0, SEEDS, 2))), str(list(range(0, 2 * SEEDS, 2)))


@pytest.mark.parametrize("kind", ["consecutive", "listed"])
def test_a_resumed_run_holds_no_list_of_its_seeds_and_writes_the_same_campaign_json(tmp_path, kind):
    # No list of seeds of this test's own either while the run goes: only text.
    first, then = seed_texts(kind)
    results = tmp_path / "res"
    evaluate(write_campaign(tmp_path / "a", campaign_text(first)), results, make_runner=lambda w, s: SeedListWatcher())
    watcher = SeedListWatcher()
    summary = evaluate(write_campaign(tmp_path / "b", campaign_text(then)), results, make_runner=lambda w, s: watcher)
    assert watcher.seed_lists == []
    expected = list(range(SEEDS)) if kind == "consecutive" else list(range(0, 2 * SEEDS, 2))
    assert summary.missing == 0 and watcher.count == len(expected) - len(expected) // 2
    data = (results / "campaign.json").read_bytes()
    value = json.loads(data)
    assert value["scenarios"][0]["seeds"] == expected
    assert data == canonical_json_reference(value) + b"\n"
    assert sorted(row["seed"] for row in read_rows(results)) == expected


def test_resolve_gives_a_range_for_consecutive_seeds_and_an_array_for_others(tmp_path):
    consecutive = driver.resolve(
        driver.load_campaign(write_campaign(tmp_path / "a", campaign_text("{ start = 5, count = 4 }")))
    )
    assert consecutive["scenarios"][0]["seeds"] == range(5, 9)
    listed = driver.resolve(driver.load_campaign(write_campaign(tmp_path / "b", campaign_text("[9, 1, 4]"))))
    seeds = listed["scenarios"][0]["seeds"]
    assert type(seeds) is array.array and seeds.typecode == "q" and list(seeds) == [1, 4, 9]


@pytest.mark.parametrize(
    "seeds",
    [(0,), (3, 4, 5), (1, 7, 2**63 - 1), range(40_000), range(7, 100_000, 3), ()],
    ids=["one", "three", "largest", "many", "stepped", "none"],
)
def test_campaign_bytes_of_compact_seeds_are_those_of_the_list(seeds):
    seeds = list(seeds)
    value = {
        "campaign": "c",
        "versions": {"simulator": "1"},
        "scenarios": [
            {"scenario_id": "a", "scenario_hash": "sha256:" + "1" * 64, "source": "a.json", "seeds": seeds},
            {"scenario_id": "b", "scenario_hash": "sha256:" + "2" * 64, "source": "b\u00e9", "seeds": [2, 3]},
        ],
        "policies": [{"name": "g", "builtin": "greedy"}],
    }
    expected = canonical_json_reference(value) + b"\n"
    for compact in (compact_seeds(seeds), array.array("q", seeds)):
        scenarios = [dict(value["scenarios"][0], seeds=compact), value["scenarios"][1]]
        assert campaign_bytes(dict(value, scenarios=scenarios)) == expected


def test_a_resume_that_adds_no_seed_keeps_the_campaign_files_compact_seeds():
    def campaign(seeds):
        scenario = {"scenario_id": "s", "scenario_hash": "sha256:" + "1" * 64, "source": "s", "seeds": seeds}
        versions = {"simulator": "1", "observation": "1", "metrics": "1", "ranking": "1", "package": "x"}
        return {
            "campaign": "c",
            "versions": versions,
            "scenarios": [scenario],
            "policies": [{"name": "g", "builtin": "greedy"}],
        }

    new = range(0, 10)
    merged = merge_campaign(campaign(list(range(0, 10, 3))), campaign(new), "campaign.json")
    assert merged["scenarios"][0]["seeds"] is new
