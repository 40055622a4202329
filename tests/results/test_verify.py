"""``ember verify`` (campaign.md §6): rows re-authenticated from their records, in a real campaign's directory."""

import gzip
import hashlib
import html
import json
import os
import shutil

import pytest

from ember.results.verify import verify_results

from helpers.results_dirs import ember_cli, in_process, line_of, rewrite_board, rewrite_rows, rows


def summary(out):
    return out.splitlines()[-1]


def test_an_untouched_directory_verifies_on_its_own_and_with_the_campaign(kept_copy):
    path, results = kept_copy
    every = rows(results)
    assert all(r["status"] == "ok" and r["record"] for r in every)
    # Kept records verify from the directory alone; the submitted ones need --campaign.
    report = verify_results(results)
    team = sorted(line_of(every, "team", r["scenario_id"], r["seed"]) for r in every if r["policy"] == "team")
    assert [line for line, _ in report.unverifiable] == team
    assert len(report.verified) == len(every) - len(team) and report.mismatched == []
    report = verify_results(results, path)
    assert sorted(report.verified) == list(range(1, len(every) + 1))
    assert (report.mismatched, report.unverifiable) == ([], [])
    done = ember_cli("verify", results, "--campaign", path, "--require-all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == (
        f"ember verify: {len(every)} verified, 0 mismatched, 0 unverifiable of 12 counting ok rows; "
        "ranking.json recomputed: identical.\n"
    )
    assert done.stderr == b""


def test_a_doctored_but_consistent_row_is_found(kept_copy):
    path, results = kept_copy
    every = rows(results)
    line = line_of(every, "stay", "office-floor", 0)
    safety = every[line - 1]["metrics"]["safety"]
    assert safety["casualties"] == 20 and safety["evacuated"] == 0
    safety["casualties"] -= 1  # one fewer casualty, one more evacuee: the safety sum still holds
    safety["evacuated"] += 1
    rewrite_board(results, every)  # ranking.json made again too: only the records can tell
    # Every reader accepts it (it is a row of the schema) ...
    assert in_process("rank", results)[0] == 0
    # ... and verify, which replays the kept record, does not.
    done = ember_cli("verify", results, "--campaign", path)
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode().splitlines()
    assert out[0] == (
        f"{results}/episodes.jsonl:{line}: mismatched: stay on office-floor seed 0: $.metrics.safety.casualties: "
        "the row has 19, records/stay/office-floor/0.record.gz gives 20"
    )
    assert out[1] == (
        f"ember verify: 11 verified, 1 mismatched (line {line}), 0 unverifiable of 12 counting ok rows; "
        "ranking.json recomputed: identical."
    )
    assert len(out) == 2 and done.stderr == b""


def test_metrics_are_compared_type_strictly(kept_copy):
    path, results = kept_copy
    every = rows(results)
    line = line_of(every, "greedy", "room", 1)
    every[line - 1]["metrics"]["movement"]["decisions"] = float(every[line - 1]["metrics"]["movement"]["decisions"])
    rewrite_rows(results, every)
    report = verify_results(results, path)
    assert [line_ for line_, _ in report.mismatched] == [line]
    reason = report.mismatched[0][1]
    assert (
        "$.metrics.movement.decisions: the row has" in reason and ".0, records/greedy/room/1.record.gz gives" in reason
    )


def test_a_changed_record_and_a_wrong_sha256(kept_copy):
    path, results = kept_copy
    every = rows(results)
    kept = results / "records" / "greedy" / "office-floor" / "1.record.gz"
    data = gzip.decompress(kept.read_bytes())
    kept.write_bytes(gzip.compress(data.replace(b'"seed":1', b'"seed":2', 1), mtime=0))
    line = line_of(every, "greedy", "room", 0)
    every[line - 1]["record_sha256"] = "0" * 64
    rewrite_rows(results, every)
    report = dict(verify_results(results, path).mismatched)
    changed = report[line_of(every, "greedy", "office-floor", 1)]
    assert "records/greedy/office-floor/1.record.gz: the engine refuses the record:" in changed
    real = hashlib.sha256(gzip.decompress((results / "records" / "greedy" / "room" / "0.record.gz").read_bytes()))
    assert report[line] == (
        f"greedy on room seed 0: $.record_sha256: the row has {'0' * 64}, "
        f"records/greedy/room/0.record.gz's SHA-256 is {real.hexdigest()}"
    )


def test_unverifiable_rows_and_their_reasons(kept_copy, tmp_path):
    path, results = kept_copy
    every = rows(results)
    os.remove(results / "records" / "stay" / "room" / "1.record.gz")
    os.remove(results / "scenarios" / "room.json")  # its source is a path: found only with --campaign
    no_record = line_of(every, "greedy", "office-floor", 0)
    every[no_record - 1].update(record=None, record_sha256=None)
    rewrite_board(results, every)
    report = verify_results(results)
    reasons = dict(report.unverifiable)
    assert reasons[no_record] == (
        "greedy on office-floor seed 0: names no record (run 'ember evaluate --keep-records' to keep records)"
    )
    assert reasons[line_of(every, "team", "office-floor", 0)] == (
        "team on office-floor seed 0: subs/office-floor/0.record: the submitted record is not in the results "
        "directory (give --campaign FILE, whose folder its path is relative to)"
    )
    assert reasons[line_of(every, "greedy", "room", 0)] == (
        'greedy on room seed 0: no scenario: scenarios/room.json is missing and the source "room.json" is a path '
        "(give --campaign FILE)"
    )
    assert report.mismatched == []
    # With the campaign file, the scenario and the submissions are found; the removed record is still missing.
    reasons = dict(verify_results(results, path).unverifiable)
    assert reasons == {
        no_record: reasons[no_record],
        line_of(every, "stay", "room", 1): "stay on room seed 1: records/stay/room/1.record.gz: the record is missing",
    }
    # Exit status (isolation.md §3): unverifiable rows fail, --require-all or not; --allow-unverifiable passes them.
    done = ember_cli("verify", results, "--campaign", path)
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode().splitlines()
    assert out[-1] == (
        "ember verify: 10 verified, 0 mismatched, 2 unverifiable of 12 counting ok rows; "
        "ranking.json recomputed: identical."
    )
    assert out[:-1] == [
        f"{results}/episodes.jsonl:{line}: unverifiable: {reason}" for line, reason in sorted(reasons.items())
    ]
    done = ember_cli("verify", results, "--campaign", path, "--require-all")
    assert done.returncode == 1 and done.stdout.decode().splitlines() == out
    done = ember_cli("verify", results, "--campaign", path, "--allow-unverifiable")
    assert done.returncode == 0 and done.stdout.decode().splitlines() == out


def test_a_record_that_is_a_fifo_is_unverifiable_at_once(kept_copy):
    path, results = kept_copy
    kept = results / "records" / "greedy" / "room" / "0.record.gz"
    os.remove(kept)
    os.mkfifo(kept)
    done = ember_cli("verify", results, "--campaign", path, timeout=60)  # a blocking open would hang here
    assert done.returncode == 1  # unverifiable, and so a failure
    assert "records/greedy/room/0.record.gz: is a FIFO, expected a regular file" in done.stdout.decode()


def test_a_tampered_scenarios_file_is_a_mismatch_for_its_rows(kept_copy):
    path, results = kept_copy
    every = rows(results)
    scenario_file = results / "scenarios" / "room.json"
    scenario = json.loads(scenario_file.read_bytes())
    scenario["fire"]["spread_probability"] = "0/1"  # no fire spread: a different scenario
    scenario_file.write_text(json.dumps(scenario))
    report = verify_results(results, path)
    room_lines = sorted(line_of(every, r["policy"], "room", r["seed"]) for r in every if r["scenario_id"] == "room")
    assert [line for line, _ in report.mismatched] == room_lines
    assert all(
        "scenarios/room.json hashes to sha256:" in reason and "the campaign's scenario_hash is" in reason
        for _, reason in report.mismatched
    )
    assert len(report.verified) == len(every) - len(room_lines)
    scenario_file.write_text("{not json")
    reasons = dict(verify_results(results, path).mismatched)
    assert "scenarios/room.json is not a valid scenario:" in reasons[room_lines[0]]
    # A pretty-printed but unchanged scenario is the same scenario (the hash is of its canonical JSON).
    scenario["fire"]["spread_probability"] = "1/2"
    scenario_file.write_text(json.dumps(scenario, indent=2))
    assert verify_results(results, path).mismatched == []


def test_a_submitted_record_replaced_after_the_run_is_a_mismatch(kept_copy):
    path, results = kept_copy
    every = rows(results)
    submitted = path.parent / "subs" / "office-floor" / "0.record"
    stay = results / "records" / "stay" / "office-floor" / "0.record.gz"
    submitted.write_bytes(gzip.decompress(stay.read_bytes()))  # a valid record, of another policy
    line = line_of(every, "team", "office-floor", 0)
    reasons = dict(verify_results(results, path).mismatched)
    assert list(reasons) == [line]
    assert (
        "$.record_sha256: the row has" in reasons[line] and "subs/office-floor/0.record's SHA-256 is" in reasons[line]
    )


def test_rows_edited_and_their_records_deleted_fail(kept_copy):
    # The attack: a row made better by hand, its record removed so that nothing can contradict it.
    path, results = kept_copy
    every = rows(results)
    line = line_of(every, "stay", "office-floor", 0)
    safety = every[line - 1]["metrics"]["safety"]
    safety["casualties"] -= 1
    safety["evacuated"] += 1
    rewrite_board(results, every)
    os.remove(results / "records" / "stay" / "office-floor" / "0.record.gz")
    for argv in ([], ["--require-all"]):
        done = ember_cli("verify", results, "--campaign", path, *argv)
        assert done.returncode == 1, done.stderr
        out = done.stdout.decode().splitlines()
        assert out == [
            f"{results}/episodes.jsonl:{line}: unverifiable: stay on office-floor seed 0: "
            "records/stay/office-floor/0.record.gz: the record is missing",
            "ember verify: 11 verified, 0 mismatched, 1 unverifiable of 12 counting ok rows; "
            "ranking.json recomputed: identical.",
        ]
    # The old rule, asked for by name: nothing mismatches, so it passes.
    done = ember_cli("verify", results, "--campaign", path, "--allow-unverifiable")
    assert done.returncode == 0 and done.stdout.decode().splitlines() == out
    # The two rules together make no sense: a usage error.
    done = ember_cli("verify", results, "--require-all", "--allow-unverifiable")
    assert (done.returncode, done.stdout) == (2, b"") and b"not allowed with argument" in done.stderr


def test_submitted_records_in_the_directory_verify_without_the_campaign_file(kept_copy):
    # An exported board keeps its submissions in the results directory (service.md §7): found there alone.
    path, results = kept_copy
    shutil.copytree(path.parent / "subs", results / "subs")
    report = verify_results(results)
    assert (len(report.verified), report.mismatched, report.unverifiable) == (12, [], [])
    done = ember_cli("verify", results)
    assert done.returncode == 0, done.stdout
    assert done.stdout.decode() == (
        "ember verify: 12 verified, 0 mismatched, 0 unverifiable of 12 counting ok rows; "
        "ranking.json recomputed: identical.\n"
    )


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (lambda r, c: ["verify", r / "nowhere"], "nowhere: no such directory"),
        (lambda r, c: ["verify", r, "--campaign", c.parent / "none.toml"], "none.toml: missing (--campaign)"),
        (lambda r, c: ["verify", r, "--campaign", c.parent], "is a directory, expected a regular file"),
        (lambda r, c: ["verify", r, "--campaign", c.parent / "room.json"], "not a campaign file (TOML)"),
    ],
    ids=["no-directory", "no-campaign-file", "campaign-is-a-directory", "campaign-not-toml"],
)
def test_bad_input_is_one_line_exit_2_nothing_on_stdout(kept_copy, argv, fragment):
    path, results = kept_copy
    status, out, err = in_process(*argv(results, path))
    assert (status, out) == (2, "")
    assert err.startswith("ember: ") and err.count("\n") == 1 and fragment in err, err


def test_another_campaigns_file_is_bad_input(kept_copy, tmp_path):
    path, results = kept_copy
    other = tmp_path / "other.toml"
    other.write_text(path.read_text().replace('campaign = "kept"', 'campaign = "other"'))
    status, out, err = in_process("verify", results, "--campaign", other)
    assert (status, out) == (2, "")
    assert 'names campaign "other", the results directory holds "kept"' in err


def test_a_directory_the_results_layer_refuses_is_bad_input(kept_copy):
    path, results = kept_copy
    with open(results / "episodes.jsonl", "ab") as handle:
        handle.write(b'{"not": "a row"}\n')
    status, out, err = in_process("verify", results, "--campaign", path)
    assert (status, out) == (2, "") and "episodes.jsonl:13: $: a row has exactly the keys" in err


def test_rank_stats_and_report_say_how_many_rows_have_their_record_present(kept_copy, tmp_path):
    path, results = kept_copy
    # The submitted records are next to the campaign file, where only 'verify --campaign' looks.
    elsewhere = (
        "4 name a submitted record that is not in the directory (ember verify --campaign FILE looks next to the "
        "campaign file)"
    )
    status, out, err = in_process("rank", results, "--format", "table")
    assert status == 0
    assert err == (
        "ember: warning: 8 of 12 counting ok rows have their record present (ember verify checks them); "
        f"4 cannot be re-verified: {elsewhere}\n"
    )
    shutil.copytree(path.parent / "subs", results / "subs")  # as an exported board keeps them
    status, out, err = in_process("rank", results, "--format", "table")
    assert (status, err) == (
        0,
        "ember: 12 of 12 counting ok rows have their record present (ember verify checks them)\n",
    )
    # The attack: rows edited, their records deleted. Each row still names its record; it is not there.
    every = rows(results)
    kept = [row for row in every if row["policy"] != "team"]
    for row in kept[:2]:
        os.remove(results / row["record"])
    for row in kept[2:5]:
        row.update(record=None, record_sha256=None)
    rewrite_rows(results, every)
    note = (
        "7 of 12 counting ok rows have their record present (ember verify checks them); 5 cannot be re-verified: "
        "3 name no record (run 'ember evaluate --keep-records'), 2 name a record that is missing"
    )
    for command in (["rank", results], ["stats", results, "--replicates", "1000"]):
        assert in_process(*command)[2] == f"ember: warning: {note}\n"
    page = tmp_path / "page.html"
    assert in_process("report", results, "-o", page)[0] == 0
    assert f'<p class="meta" id="verifiable">{html.escape(note)}.</p>' in page.read_text()
    os.remove(results / kept[5]["record"])
    for row in kept[6:] + [row for row in every if row["policy"] == "team"]:
        row.update(record=None, record_sha256=None)
    rewrite_rows(results, every)
    assert in_process("rank", results)[2] == (
        "ember: warning: 0 of 12 counting ok rows have their record present: nothing here can be re-verified: "
        "9 name no record (run 'ember evaluate --keep-records'), 3 name a record that is missing\n"
    )


def test_a_progress_bar_on_a_terminal_only(kept_campaign):
    """On a terminal's stderr a bar over the rows (tqdm); in a pipe nothing (asserted above: stderr empty)."""
    import pty
    import select
    import subprocess
    import sys

    path, results = kept_campaign
    master, slave = pty.openpty()
    shown = b""
    try:
        args = [sys.executable, "-m", "ember.cli", "verify", str(results), "--campaign", str(path)]
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        while True:
            ready, _, _ = select.select([master], [], [], 60)  # a hang fails here, never blocks
            assert ready, "no output and no end within 60 s"
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert process.wait(60) == 0
    assert b"ember: verifying rows" in shown and b"/12 [" in shown, shown
