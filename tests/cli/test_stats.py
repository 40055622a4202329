"""``ember stats``: the JSON is statistics.json's bytes; bad input is one line, exit 2, nothing written."""

import os
import subprocess
import sys

import pytest

from ember.cli import main
from ember.stats import compute_statistics, statistics_bytes

from helpers.ranking_results import builtin_results


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return builtin_results(
        tmp_path_factory.mktemp("results"),
        scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0,))),
    )


def unverifiable(rows):
    """What rank and stats say on stderr about rows without kept records (ember verify cannot check them)."""
    return (
        f"ember: warning: 0 of {rows} counting ok rows have their record present: nothing here can be re-verified: "
        f"{rows} name no record (run 'ember evaluate --keep-records')\n"
    )


def run(capsysbinary, *argv):
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse refuses a bad option value by exiting
        status = exc.code
    out, err = capsysbinary.readouterr()
    return status, out, err.decode()


def assert_bad_input(status, out, err, *fragments):
    assert status == 2
    assert out == b""
    assert err.startswith("ember: ") and err.endswith("\n") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


def expected_bytes(results, replicates=10_000, seed=0):
    return statistics_bytes(compute_statistics(results.campaign, results.episodes(), replicates, seed)[0])


def test_json_is_statistics_bytes_on_stdout_and_in_a_file(results, tmp_path, capsysbinary):
    status, out, err = run(capsysbinary, "stats", results.path)  # defaults: B = 10,000, seed 0
    assert (status, out, err) == (0, expected_bytes(results), unverifiable(12))
    target = tmp_path / "statistics.json"
    argv = ["stats", results.path, "-o", target, "--replicates", "1001", "--seed", "18446744073709551615"]
    status, out, err = run(capsysbinary, *argv, "--format", "json")
    assert (status, out, err) == (0, b"", unverifiable(12))
    assert target.read_bytes() == expected_bytes(results, 1001, 2**64 - 1)
    assert os.listdir(tmp_path) == ["statistics.json"]  # no temporary file left


def test_real_process_prints_the_same_bytes(results):
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "stats", results.path, "--replicates", "1000", "--seed", "9"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected_bytes(results, 1000, 9)
    assert done.stderr == unverifiable(12).encode()  # and no progress bar: stderr is not a terminal


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_tables_show_intervals_groups_pairs_and_the_few_seed_warning(results, capsysbinary, fmt):
    status, out, err = run(capsysbinary, "stats", results.path, "--format", fmt, "--replicates", "1000")
    assert status == 0 and err == unverifiable(12)
    text = out.decode()
    assert text.index("greedy") < text.index("random") < text.index(" stay")
    assert "rank 95%" in text and "group" in text and "above / equal / below" in text
    assert "greedy is above random in 100% of 1,000 resamples; separated at 95%" in text
    assert "1 scenario has a single seed (bottleneck)" in text
    assert "1 scenario has fewer than 10 seeds (small-room (3))" in text
    header = next(line for line in text.splitlines() if "policy" in line.split() or "| policy" in line)
    assert header.startswith("|") == (fmt == "markdown")


BAD_REPLICATES = [
    "999",
    "1000001",
    "01000",
    "+1000",
    "1_000",
    " 1000",
    "1e4",
    "１０００",
    "1000.0",
    "",
    "True",
    "-1000",
]
BAD_SEEDS = ["-1", "18446744073709551616", "00", "+0", "0x10", "1_0", "٣", "", " 5", "False"]


@pytest.mark.parametrize("value", BAD_REPLICATES)
def test_bad_replicates(results, tmp_path, capsysbinary, value):
    target = tmp_path / "s.json"
    done = run(capsysbinary, "stats", results.path, "-o", target, "--replicates", value)
    assert_bad_input(*done, "argument --replicates: expected an integer 1000 <= B <= 1000000 in decimal digits")
    assert not target.exists()


@pytest.mark.parametrize("value", BAD_SEEDS)
def test_bad_seed(results, tmp_path, capsysbinary, value):
    target = tmp_path / "s.json"
    done = run(capsysbinary, "stats", results.path, "-o", target, "--seed", value)
    assert_bad_input(*done, "argument --seed: expected an integer 0 <= seed < 2^64 in decimal digits")
    assert not target.exists()


def test_bad_results_directories(tmp_path, capsysbinary):
    target = tmp_path / "s.json"
    assert_bad_input(*run(capsysbinary, "stats", tmp_path / "nowhere", "-o", target), "no such directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_bad_input(*run(capsysbinary, "stats", empty, "-o", target), f"{empty}/campaign.json: missing")
    results = builtin_results(tmp_path / "r", policies=("greedy",))
    os.remove(results.episodes_path)
    assert_bad_input(*run(capsysbinary, "stats", results.path, "-o", target), "episodes.jsonl: missing")
    assert not target.exists()


def test_a_bad_row_names_its_line(tmp_path, capsysbinary):
    results = builtin_results(tmp_path / "r", policies=("greedy",))
    results.append(b"[]\n")
    target = tmp_path / "s.json"
    done = run(capsysbinary, "stats", results.path, "-o", target)
    assert_bad_input(*done, f"{results.path}/episodes.jsonl:4: $: expected an object")
    assert not target.exists()


def test_statistics_input_errors_name_the_file(tmp_path, capsysbinary):
    results = builtin_results(tmp_path / "r", policies=("greedy",))
    results.campaign["scenarios"][0]["seeds"] = [2, 1, 0]
    results.write_campaign()
    done = run(capsysbinary, "stats", results.path)
    assert_bad_input(*done, f"{results.path}/campaign.json: $.scenarios[0].seeds[1]: expected seeds in strictly")
    results = builtin_results(tmp_path / "p", policies=("greedy", "stay"))
    rows = results.episodes().splitlines(keepends=True)
    broken = rows[-1].replace(b'"population":4', b'"population":5').replace(b'"evacuated":0', b'"evacuated":1')
    assert broken != rows[-1]
    with open(results.episodes_path, "wb") as handle:
        handle.writelines(rows[:-1] + [broken])
    done = run(capsysbinary, "stats", results.path)
    assert_bad_input(*done, f"{results.path}/episodes.jsonl:6: $.metrics.safety.population: expected 4")


def test_without_the_stats_extra_one_line_names_it(results, tmp_path, capsysbinary, monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)  # as if numpy were not installed
    target = tmp_path / "s.json"
    done = run(capsysbinary, "stats", results.path, "-o", target)
    assert_bad_input(*done, "pip install 'ember-eval[stats]'")
    assert not target.exists()


def test_without_the_stats_extra_in_a_real_process(results):
    code = "import sys; sys.modules['scipy'] = None; from ember.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "stats", results.path], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == b"ember: statistics need numpy, scipy and threadpoolctl: pip install 'ember-eval[stats]'\n"


def test_table_without_tabulate_names_the_extra_before_resampling(results, tmp_path, capsysbinary, monkeypatch):
    monkeypatch.setitem(sys.modules, "tabulate", None)
    target = tmp_path / "s.txt"
    assert_bad_input(*run(capsysbinary, "stats", results.path, "--format", "table", "-o", target), "ember-eval[cli]")
    assert not target.exists()


def test_torn_line_warns_on_stderr(tmp_path, capsysbinary):
    results = builtin_results(tmp_path, policies=("greedy",))
    whole = expected_bytes(results, 1000)
    results.append(b'{"scenario_id":')
    status, out, err = run(capsysbinary, "stats", results.path, "--replicates", "1000")
    assert status == 0
    assert out == whole
    assert err == (
        f"ember: warning: {results.path}/episodes.jsonl:4: ignored 15 bytes after the last newline (a torn line)\n"
    ) + unverifiable(3)


def test_stats_tells_of_the_rows_as_rank_does(results, capsysbinary):
    """rank and stats read the directory the same way and say the same about it on stderr."""
    rank = run(capsysbinary, "rank", results.path)
    stats = run(capsysbinary, "stats", results.path, "--replicates", "1000")
    assert rank[0] == stats[0] == 0 and rank[2] == stats[2] == unverifiable(12)


def test_the_command_line_does_not_import_numpy_until_stats_runs():
    code = "import sys; from ember.cli import build_parser; build_parser(); print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=True)
    assert done.stdout == b"False\n"
