"""A full disk is EMBER's failure, not a policy's (no row is charged for it), on real small file systems.

Each test mounts a tmpfs of a few pages (this needs root, as CI runs; the
tests are skipped, saying so, only where mounting is impossible) and runs
the real command on it: the run stops with exit 2 naming the path and the
error, no row is torn or charged to a policy, no temporary file is left,
and a plain resume, once there is room, runs exactly the episodes without
a row.
"""

import gzip
import hashlib
import os
import subprocess

import pytest

from ember.campaign.campaign_file import load_campaign
from ember.campaign.driver import resolve
from ember.canonical import canonical_json_reference
from ember.errors import ResultsIOError
from ember.results.writer import ResultsWriter

from helpers.campaign_processes import write_files
from helpers.campaigns import by_key, ember_cli, read_rows


def _mount(folder, size):
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a small file system here ({exc}); the full-disk tests need root")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.decode().strip()}")


def _resize(folder, size):
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True, timeout=30)


@pytest.fixture
def small_fs(tmp_path):
    """mount(folder, size) mounts a tmpfs there; every mount is undone at the end."""
    mounted = []

    def mount(folder, size):
        _mount(folder, size)
        mounted.append(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


def temporary_files(folder):
    return [str(p) for p in folder.rglob("*") if ".tmp" in p.name]


def campaign(folder, seeds, scenario="builtin:bottleneck"):
    return (
        write_files(
            folder,
            {
                "campaign.toml": f'campaign = "disk"\nseeds = {seeds}\nscenarios = ["{scenario}"]\n'
                '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
            },
        )
        / "campaign.toml"
    )


def assert_stopped_on_a_full_disk(done, results):
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"ember: {results}") and ": No space left on device" in line, line
    assert "; the run stopped (every row written is whole;" in line
    return line


def test_a_row_is_written_whole_or_not_at_all(small_fs, tmp_path):
    campaign_path = campaign(tmp_path / "c", "{ start = 0, count = 100 }", scenario="builtin:small-room")
    loaded = load_campaign(campaign_path)
    resolved = resolve(loaded)
    results = small_fs(tmp_path / "res", "64k")
    store = ResultsWriter(results)
    store.lock()
    store.prepare(resolved)
    store.start(b"", [(entry.scenario_id, entry.data) for entry in loaded.scenarios])
    sc = resolved["scenarios"][0]

    def row(seed):  # a failed row of about 3 kB: a few fill a page
        return {
            "scenario_id": sc["scenario_id"],
            "scenario_hash": sc["scenario_hash"],
            "seed": seed,
            "policy": "greedy",
            "status": "failed",
            "error": "x" * 3000,
            "metrics": None,
            "steps": None,
            "record": None,
            "record_sha256": None,
            "elapsed_s": 0.0,
        }

    # Leave less room than one more row: the file system refuses the rest of a write (a short write).
    fd = os.open(results / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    written = []
    with pytest.raises(ResultsIOError) as raised:
        for seed in range(100):
            store.append(row(seed))
            written.append(row(seed))
    store.close()
    assert str(raised.value).startswith(f"{results / 'episodes.jsonl'}: No space left on device")
    data = (results / "episodes.jsonl").read_bytes()
    assert data == b"".join(canonical_json_reference(r) + b"\n" for r in written)


def test_a_full_disk_stops_the_run_and_a_resume_finishes_it(small_fs, tmp_path):
    path = campaign(tmp_path / "c", "{ start = 0, count = 40 }")
    results = small_fs(tmp_path / "res", "256k")  # room for a few of the 40 kept records (about 14 kB each)
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    assert_stopped_on_a_full_disk(done, results)
    before = (results / "episodes.jsonl").read_bytes()
    rows = read_rows(results)  # whole rows only
    assert rows and len(rows) < 40
    assert all(row["status"] == "ok" for row in rows)  # nothing charged to the policy
    assert temporary_files(results) == []
    assert not (results / "ranking.json").exists()
    _resize(results, "16m")
    resumed = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    assert resumed.returncode == 0, resumed.stderr
    assert (results / "episodes.jsonl").read_bytes().startswith(before)  # the rows written stay as they were
    rows = by_key(read_rows(results))
    assert len(rows) == 40 and all(row["status"] == "ok" for row in rows.values())
    for row in rows.values():
        data = gzip.decompress((results / row["record"]).read_bytes())
        assert hashlib.sha256(data).hexdigest() == row["record_sha256"]
    assert temporary_files(results) == []


def test_only_records_full_charges_no_policy(small_fs, tmp_path):
    path = campaign(tmp_path / "c", "[0]")
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results).returncode == 0
    (results / "records").mkdir()
    small_fs(results / "records", "64k")
    path = campaign(tmp_path / "c", "{ start = 0, count = 30 }")  # a resume that adds seeds
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    line = assert_stopped_on_a_full_disk(done, results)
    assert f"{results / 'records'}" in line
    rows = read_rows(results)
    assert all(row["status"] == "ok" for row in rows) and len(rows) < 30
    assert temporary_files(results) == []
    _resize(results / "records", "16m")
    resumed = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    assert resumed.returncode == 0, resumed.stderr
    rows = by_key(read_rows(results))
    assert len(rows) == 30 and all(row["status"] == "ok" for row in rows.values())


def test_a_resume_removes_temporary_files_a_killed_run_left(tmp_path):
    path = campaign(tmp_path / "c", "[0, 1]", scenario="builtin:small-room")
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results, "--keep-records").returncode == 0
    left = [
        results / "records" / "greedy" / "small-room" / "5.record.gz.tmp0123abcd",
        results / "records" / "greedy" / "small-room" / ".5.record.gz.tmp4242.0",
        results / "logs" / "greedy" / "small-room" / "5.stderr.tmpfeed",
    ]
    for leftover in left:
        leftover.parent.mkdir(parents=True, exist_ok=True)
        leftover.write_bytes(b"half a file")
    kept = sorted(os.listdir(results / "records" / "greedy" / "small-room"))
    assert ember_cli("evaluate", path, "-o", results, "--keep-records").returncode == 0
    assert temporary_files(results) == []
    assert sorted(os.listdir(results / "records" / "greedy" / "small-room")) == [
        name for name in kept if ".tmp" not in name
    ]
