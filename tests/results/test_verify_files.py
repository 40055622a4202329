"""``ember verify`` recomputes ranking.json and statistics.json when they are there (isolation.md §3, campaign.md §6).

Real results directories of one ``ember evaluate --keep-records`` run (tests/results/conftest.py), changed by hand
as a participant who wants a better place would change them.
"""

import json
import os
import subprocess
import sys

from ember.canonical import canonical_json_reference

from helpers.results_dirs import ember_cli, in_process

ROWS_OK = "ember verify: 12 verified, 0 mismatched, 0 unverifiable of 12 counting ok rows"


def verify(results, path, *more):
    return ember_cli("verify", results, "--campaign", path, *more)


def edit_json(file, change):
    value = json.loads(file.read_bytes())
    change(value)
    file.write_bytes(canonical_json_reference(value) + b"\n")


def test_a_hand_edited_ranking_json_fails(kept_copy):
    path, results = kept_copy
    ranking = results / "ranking.json"
    original = ranking.read_bytes()
    value = json.loads(original)
    worst = value["ranked"][-1]
    assert (worst["policy"], worst["casualties"]) == ("stay", 44)
    edit_json(ranking, lambda v: v["ranked"][-1].update(casualties=0))
    done = verify(results, path)
    assert done.returncode == 1, done.stderr
    offset = next(i for i, (a, b) in enumerate(zip(ranking.read_bytes(), original)) if a != b)
    assert done.stdout.decode().splitlines() == [
        f"{results}/ranking.json: mismatched: differs from the bytes recomputed from the rows at byte {offset}: "
        "$.ranked[2].casualties: the file has 0, recomputed 44",
        f"{ROWS_OK}; ranking.json recomputed: differs.",
    ]
    # --allow-unverifiable allows what cannot be checked, never what differs.
    assert verify(results, path, "--allow-unverifiable").returncode == 1
    # Any byte counts: the same JSON written otherwise is not the file 'ember evaluate' wrote.
    ranking.write_bytes(original[:-1] + b" \n")
    done = verify(results, path)
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[0] == (
        f"{results}/ranking.json: mismatched: differs from the bytes recomputed from the rows at byte "
        f"{len(original) - 1} (the same JSON in other bytes)"
    )
    ranking.write_bytes(b"not json\n")
    assert "at byte 0 (the file is not JSON)" in verify(results, path).stdout.decode()
    ranking.write_bytes(original)
    done = verify(results, path)
    assert (done.returncode, done.stdout.decode()) == (0, f"{ROWS_OK}; ranking.json recomputed: identical.\n")


def test_rows_rewritten_without_their_ranking_json_fail_even_without_records(kept_copy):
    path, results = kept_copy
    lines = (results / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    rows = [json.loads(line) for line in lines]
    for row in rows:
        row.update(record=None, record_sha256=None)
    (results / "episodes.jsonl").write_bytes(b"".join(canonical_json_reference(r) + b"\n" for r in rows))
    done = verify(results, path, "--allow-unverifiable")
    assert done.returncode == 1
    out = done.stdout.decode().splitlines()
    assert out[-1] == (
        "ember verify: 0 verified, 0 mismatched, 12 unverifiable of 12 counting ok rows; ranking.json recomputed: "
        "differs."
    )
    assert out[-2].startswith(f"{results}/ranking.json: mismatched: ") and "$.source.sha256: the file has" in out[-2]


def test_statistics_json_is_recomputed_with_its_own_replicates_and_seed(kept_copy):
    path, results = kept_copy
    statistics = results / "statistics.json"
    status, _, err = in_process("stats", results, "--replicates", "1000", "--seed", "7", "-o", statistics)
    assert status == 0, err
    done = verify(results, path)
    assert (done.returncode, done.stdout.decode()) == (
        0,
        f"{ROWS_OK}; ranking.json recomputed: identical; statistics.json recomputed: identical.\n",
    )
    original = statistics.read_bytes()
    value = json.loads(original)
    assert (value["replicates"], value["seed"]) == (1000, 7)
    low, high = value["policies"][0]["casualties"]["interval"]
    edit_json(statistics, lambda v: v["policies"][0]["casualties"].update(interval=[low, high + 1]))
    done = verify(results, path)
    assert done.returncode == 1
    assert done.stdout.decode().splitlines() == [
        f"{results}/statistics.json: mismatched: differs from the bytes recomputed from the rows at byte "
        f"{next(i for i, (a, b) in enumerate(zip(statistics.read_bytes(), original)) if a != b)}: "
        f"$.policies[0].casualties.interval[1]: the file has {high + 1}, recomputed {high}",
        f"{ROWS_OK}; ranking.json recomputed: identical; statistics.json recomputed: differs.",
    ]
    edit_json(statistics, lambda v: v.update(replicates=5))
    assert verify(results, path).stdout.decode().splitlines()[0] == (
        f"{results}/statistics.json: mismatched: cannot be made from these rows: "
        f"{results}/statistics.json: $.replicates: expected an integer 1000 <= B <= 1000000, got 5"
    )


def test_without_the_stats_extra_statistics_json_is_unverifiable(kept_copy):
    path, results = kept_copy
    status, _, err = in_process("stats", results, "--replicates", "1000", "-o", results / "statistics.json")
    assert status == 0, err
    code = "import sys; sys.modules['scipy'] = None; from ember.cli import main; sys.exit(main())"
    argv = [sys.executable, "-c", code, "verify", str(results), "--campaign", str(path)]
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stdout.decode().splitlines() == [
        f"{results}/statistics.json: unverifiable: statistics need numpy, scipy and threadpoolctl: "
        "pip install 'ember-eval[stats]'",
        f"{ROWS_OK}; ranking.json recomputed: identical; statistics.json recomputed: cannot be recomputed here.",
    ]
    done = subprocess.run([*argv, "--allow-unverifiable"], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_a_ranking_json_that_is_not_a_regular_file_is_bad_input(kept_copy):
    path, results = kept_copy
    os.remove(results / "ranking.json")
    os.mkfifo(results / "ranking.json")
    done = ember_cli("verify", results, "--campaign", path, timeout=60)  # a blocking open would hang here
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == f"ember: {results}/ranking.json: is a FIFO, expected a regular file\n"
    os.remove(results / "ranking.json")  # absent: nothing to recompute, nothing said
    done = verify(results, path)
    assert (done.returncode, done.stdout.decode()) == (0, f"{ROWS_OK}.\n")
