"""What ``evaluate`` writes is what the results layer reads: scenarios/, and nothing a reader would refuse."""

import hashlib
import json

import pytest

from ember.canonical import canonical_json
from ember.results import read_results
from ember.scenario import load_scenario

from helpers.results_dirs import ROOM, in_process, rows, snapshot


def test_scenarios_are_written_with_campaign_json(kept_campaign):
    path, results = kept_campaign
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert sorted(p.name for p in (results / "scenarios").iterdir()) == ["office-floor.json", "room.json"]
    for entry in campaign["scenarios"]:
        data = (results / "scenarios" / f"{entry['scenario_id']}.json").read_bytes()
        scenario = load_scenario("builtin:office") if entry["source"] == "builtin:office" else ROOM
        assert data == canonical_json(scenario) + b"\n"
        assert "sha256:" + hashlib.sha256(data[:-1]).hexdigest() == entry["scenario_hash"]


def test_a_resume_rewrites_the_scenarios(kept_copy):
    path, results = kept_copy
    (results / "scenarios" / "room.json").write_text("{}")
    (results / "scenarios" / "office-floor.json").unlink(missing_ok=True)
    before = (results / "episodes.jsonl").read_bytes()
    status, out, err = in_process("evaluate", path, "-o", results, "--workers", "1")
    assert status == 0, err
    assert (results / "episodes.jsonl").read_bytes() == before  # nothing to run
    assert (results / "scenarios" / "room.json").read_bytes() == canonical_json(ROOM) + b"\n"
    assert (results / "scenarios" / "office-floor.json").read_bytes() == canonical_json(
        load_scenario("builtin:office")
    ) + b"\n"


def test_a_row_longer_than_a_reader_reads_is_written_as_a_failed_row(kept_copy, monkeypatch):
    # The line is made where the episode runs (rows.row_line): the attempts run in this process here,
    # so that the lowered limit is the one they see.
    import ember.results.rows as row_module
    from ember.campaign import evaluate
    from ember.campaign.attempt import run_task_line

    class HereRunner:
        window = 1

        def __init__(self):
            self.tasks = {}

        def submit(self, task, key, attempt):
            self.tasks[len(self.tasks)] = task
            return len(self.tasks) - 1

        def wait(self, futures):
            return list(futures)

        def outcomes(self, done):
            return [(f, "row", run_task_line(self.tasks.pop(f))) for f in done]

        def close(self, terminate=False):
            pass

        def check_sandbox(self, files):
            pass

    path, results = kept_copy
    shortest = 1000  # an ok row's metrics alone are longer; a failed row is not
    assert all(len(line) > shortest for line in (results / "episodes.jsonl").read_bytes().splitlines())
    monkeypatch.setattr(row_module, "MAX_LINE_BYTES", shortest)
    path.with_name("more.toml").write_text(path.read_text() + '\n[[policies]]\nname = "rnd"\nbuiltin = "random"\n')
    summary = evaluate(path.with_name("more.toml"), results, make_runner=lambda w, s: HereRunner())
    assert summary.missing == 0
    added = [r for r in rows(results) if r["policy"] == "rnd"]
    assert len(added) == 4 and all(r["status"] == "failed" for r in added)
    assert all(
        r["error"].endswith(f"bytes, more than the {shortest:,} a row may have (docs/campaigns.md)")
        and (r["metrics"], r["steps"], r["record"], r["record_sha256"]) == (None, None, None, None)
        for r in added
    )
    assert read_results(results).lines == 16  # what was written reads back


def test_a_campaign_json_larger_than_a_reader_reads_is_refused_before_writing(kept_copy, monkeypatch, tmp_path):
    import ember.results.writer as store

    path, results = kept_copy
    monkeypatch.setattr(store, "MAX_CAMPAIGN_BYTES", 100)
    before = snapshot(results)
    status, out, err = in_process("evaluate", path, "-o", results)
    assert (status, out) == (2, "")
    assert f"{results}/campaign.json: the campaign's campaign.json would be " in err
    assert "more than the 100 a results directory may hold" in err
    assert snapshot(results) == before
    status, out, err = in_process("evaluate", path, "-o", tmp_path / "new")
    assert status == 2 and not (tmp_path / "new").exists()  # the folder it created is removed again


@pytest.mark.parametrize("leftover", [["episodes.jsonl"], []])
def test_a_run_killed_during_its_first_writes_leaves_a_new_directory(kept_campaign, tmp_path, leftover):
    path, _ = kept_campaign
    results = tmp_path / "res"
    results.mkdir()
    for name in leftover:
        (results / name).write_bytes(b"")
    (results / ".campaign.json.tmp123.0").write_bytes(b"{")  # files.write_atomically's temporary name
    status, out, err = in_process("evaluate", path, "-o", results, "--workers", "2")
    assert status == 0, err
    assert read_results(results).lines == 12
