"""Every reader of a results directory accepts and refuses exactly the same files (one results layer).

The readers are the commands: ``evaluate`` (its resume), ``export``,
``rank``, ``report`` and ``verify``.  A tampered row gets the same one-line
message from each, and ``evaluate`` refuses it before it runs or writes
anything.  A FIFO, a device or a directory where a file belongs is refused
at once, in a real process under a timeout (a blocking open would hang).
"""

import json
import os

import pytest

from helpers.results_dirs import ember_cli, in_process, rewrite_rows, rows, snapshot

#: Each command that reads a results directory: argv for (campaign file, results directory, an output path).
READERS = {
    "evaluate": lambda c, r, o: ["evaluate", c, "-o", r],
    "export": lambda c, r, o: ["export", r, "-o", o],
    "rank": lambda c, r, o: ["rank", r, "-o", o],
    "report": lambda c, r, o: ["report", r, "-o", o],
    "verify": lambda c, r, o: ["verify", r, "--campaign", c],
}


def _set(path, value):
    def change(row):
        target = row
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _bump(path, by):
    def change(row):
        target = row
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] += by

    return change


#: name -> (change to line 3's row, the reason every reader gives).
TAMPERED = {
    "steps many": (_set(["steps"], "many"), '$.steps: expected an integer >= 0 on an ok row, got "many"'),
    "casualties -1": (
        _set(["metrics", "safety", "casualties"], -1),
        "$.metrics.safety.casualties: expected an integer 0 <= n < 2^63, got -1",
    ),
    "metrics {}": (_set(["metrics"], {}), "$.metrics: missing key 'scenario_hash'"),
    "metrics scenario_hash": (
        _set(["metrics", "scenario_hash"], "sha256:" + "0" * 64),
        "$.metrics.scenario_hash: expected the row's",
    ),
    "elapsed_s -5": (_set(["elapsed_s"], -5), "$.elapsed_s: expected a number >= 0, got -5"),
    "safety sum": (
        _bump(["metrics", "safety", "evacuated"], 1),
        "$.metrics.safety: evacuated + casualties + stranded must equal population",
    ),
    "steps not episode_steps": (_bump(["steps"], 1), "$.metrics.time.episode_steps: expected the row's steps"),
    "metrics scenario_id": (_set(["metrics", "scenario_id"], "elsewhere"), "$.metrics.scenario_id: expected the row's"),
    "metrics version": (
        _set(["metrics", "metrics_version"], "0.9"),
        '$.metrics.metrics_version: expected metrics version "1.0"',
    ),
    "absolute record": (_set(["record"], "/etc/passwd"), '$.record: expected a relative path, got "/etc/passwd"'),
    "record without sha": (
        _set(["record_sha256"], None),
        "$.record_sha256: expected 64 lowercase hex digits, got null",
    ),
    "seed true": (_set(["seed"], True), "$.seed: expected an integer, got true"),
    "status done": (_set(["status"], "done"), '$.status: expected "ok" or "failed", got "done"'),
    "extra key": (_set(["note"], 1), 'unknown "note"'),
}


def _expected_line(results, line, reason):
    return f"ember: {results}/episodes.jsonl:{line}: {reason}"


def _refused_identically(path, results, tmp_path, reason_fragment):
    """Run every reader; all exit 2 with one identical line containing the fragment, and write nothing."""
    added = path.parent / "more.toml"  # evaluate would run the added policy's episodes: it must not
    added.write_text(path.read_text() + '\n[[policies]]\nname = "rnd"\nbuiltin = "random"\n')
    before = snapshot(results)
    lines = {}
    for name, argv in READERS.items():
        output = tmp_path / f"out-{name}"
        status, out, err = in_process(*argv(added, results, output))
        assert (status, out) == (2, ""), (name, status, out, err)
        assert err.count("\n") == 1, (name, err)
        lines[name] = err.rstrip("\n")
        assert not output.exists(), name
        assert snapshot(results) == before, name  # no row, campaign.json and ranking.json as they were
    assert len(set(lines.values())) == 1, lines
    assert reason_fragment in lines["rank"], lines["rank"]
    return lines["rank"]


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_a_tampered_row_is_refused_by_every_reader_alike(kept_copy, tmp_path, name):
    path, results = kept_copy
    change, reason = TAMPERED[name]
    every = rows(results)
    change(every[2])
    rewrite_rows(results, every)
    line = _refused_identically(path, results, tmp_path, reason)
    assert line.startswith(_expected_line(results, 3, ""))
    assert (results / "ranking.json").exists()  # evaluate removes a stale ranking only once it may run


@pytest.mark.parametrize(
    "data, reason",
    [
        (lambda every: b"not json\n", "not a JSON text:"),
        (lambda every: json.dumps(every[0]).encode() + b"\n", "after its ok row on line 1"),
        (lambda every: b'{"a": 1, "a": 2}\n', "not a JSON text: duplicate key 'a'"),
        (lambda every: b"[]\n", "$: expected an object, got []"),
    ],
    ids=["not-json", "after-ok", "duplicate-key", "array"],
)
def test_a_line_that_is_not_a_row_is_refused_by_every_reader_alike(kept_copy, tmp_path, data, reason):
    path, results = kept_copy
    every = rows(results)
    with open(results / "episodes.jsonl", "ab") as handle:
        handle.write(data(every))
    line = _refused_identically(path, results, tmp_path, reason)
    assert line.startswith(_expected_line(results, len(every) + 1, ""))


CAMPAIGN_CHANGES = {
    "unknown key": (lambda c: c.update(note=1), 'campaign.json: $: unknown key "note"'),
    "no package version": (lambda c: c["versions"].pop("package"), "$.versions: missing key 'package'"),
    "scenario hash not a hash": (
        lambda c: c["scenarios"][0].update(scenario_hash="office"),
        '$.scenarios[0].scenario_hash: expected sha256:<64 hex>, got "office"',
    ),
    "step_timeout on a builtin": (
        lambda c: c["policies"][0].update(step_timeout=1.0),
        '$.policies[0]: unknown key "step_timeout"',
    ),
    "ranking version": (
        lambda c: c["versions"].update(ranking="2.0"),
        '$.versions.ranking: this is ranking version 1.0, the campaign has "2.0"',
    ),
}


@pytest.mark.parametrize("name", sorted(CAMPAIGN_CHANGES))
def test_a_tampered_campaign_json_is_refused_by_every_reader_alike(kept_copy, tmp_path, name):
    from ember.canonical import canonical_json_reference

    path, results = kept_copy
    change, reason = CAMPAIGN_CHANGES[name]
    campaign = json.loads((results / "campaign.json").read_bytes())
    change(campaign)
    (results / "campaign.json").write_bytes(canonical_json_reference(campaign) + b"\n")
    line = _refused_identically(path, results, tmp_path, reason)
    assert line.startswith(f"ember: {results}/campaign.json: ")


def _fifo(target):
    os.mkfifo(target)


def _dev_zero(target):
    os.symlink("/dev/zero", target)


def _directory(target):
    os.mkdir(target)


STRANGE = {
    "fifo": (_fifo, "is a FIFO, expected a regular file"),
    "dev-zero": (_dev_zero, "is a character device, expected a regular file"),
    "directory": (_directory, "is a directory, expected a regular file"),
}


@pytest.mark.parametrize("command", sorted(READERS))
@pytest.mark.parametrize("file", ["episodes.jsonl", "campaign.json"])
@pytest.mark.parametrize("kind", sorted(STRANGE))
def test_a_file_that_is_no_regular_file_is_refused_at_once(kept_copy, tmp_path, command, file, kind):
    path, results = kept_copy
    make, reason = STRANGE[kind]
    os.remove(results / file)
    make(results / file)
    before = snapshot(results)
    output = tmp_path / "out"
    done = ember_cli(*READERS[command](path, results, output), timeout=60)  # a hang fails, never blocks
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (2, b""), err
    assert err == f"ember: {results}/{file}: {reason}\n"
    assert not output.exists()
    assert snapshot(results) == before


@pytest.mark.parametrize("command", sorted(READERS))
def test_missing_means_missing_and_a_file_is_no_directory(kept_copy, tmp_path, command):
    path, results = kept_copy
    os.remove(results / "episodes.jsonl")
    argv = READERS[command](path, results, tmp_path / "out")
    if command != "evaluate":  # evaluate takes a folder without campaign.json for a new one: see the store
        status, out, err = in_process(*argv)
        assert (status, out) == (2, "")
        assert (
            err
            == f"ember: {results}/episodes.jsonl: missing: not a results directory ('ember evaluate -o' writes it)\n"
        )
        a_file = tmp_path / "file"
        a_file.write_text("x")
        status, out, err = in_process(*READERS[command](path, a_file, tmp_path / "out"))
        assert (status, out) == (2, "")
        assert f"{a_file}: is a regular file, expected a results directory" in err
    else:
        status, out, err = in_process(*argv)
        assert (status, out) == (2, "")
        assert (
            err
            == f"ember: {results}/episodes.jsonl: missing: not a results directory ('ember evaluate -o' writes it)\n"
        )
