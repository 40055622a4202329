"""``ember rank``: the JSON is ranking.json's bytes; bad input is one line, exit 2, nothing written."""

import os
import subprocess
import sys

import pytest

from ember.cli import main
from ember.ranking import compute_ranking, ranking_bytes

from helpers.ranking_results import builtin_results, canonical_line, failed_row, hand_metrics, ok_row


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return builtin_results(tmp_path_factory.mktemp("results"))


#: What rank says on stderr about rows of a results directory without kept records (ember verify).
UNVERIFIABLE = (
    "ember: warning: 0 of 9 counting ok rows have their record present: nothing here can be re-verified: "
    "9 name no record (run 'ember evaluate --keep-records')\n"
)


def run(capsysbinary, *argv):
    status = main([str(a) for a in argv])
    out, err = capsysbinary.readouterr()
    return status, out, err.decode()


def assert_bad_input(status, out, err, *fragments):
    assert status == 2
    assert out == b""
    assert err.startswith("ember: ") and err.endswith("\n") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


def test_json_is_ranking_bytes_on_stdout_and_in_a_file(results, tmp_path, capsysbinary):
    expected = ranking_bytes(compute_ranking(results.campaign, results.episodes())[0])
    status, out, err = run(capsysbinary, "rank", results.path)
    assert (status, out, err) == (0, expected, UNVERIFIABLE)
    target = tmp_path / "ranking.json"
    status, out, err = run(capsysbinary, "rank", results.path, "-o", target, "--format", "json")
    assert (status, out, err) == (0, b"", UNVERIFIABLE)
    assert target.read_bytes() == expected
    assert os.listdir(tmp_path) == ["ranking.json"]  # no temporary file left


def test_real_process_prints_the_same_bytes(results):
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "rank", results.path], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ranking_bytes(compute_ranking(results.campaign, results.episodes())[0])


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_tables(results, capsysbinary, fmt):
    status, out, err = run(capsysbinary, "rank", results.path, "--format", fmt)
    assert status == 0 and err == UNVERIFIABLE
    text = out.decode()
    assert text.index("greedy") < text.index("random") < text.index(" stay")
    header = next(line for line in text.splitlines() if "policy" in line.split() or "| policy" in line)
    assert header.startswith("|") == (fmt == "markdown")


def test_table_without_tabulate_names_the_extra(results, tmp_path, capsysbinary, monkeypatch):
    monkeypatch.setitem(sys.modules, "tabulate", None)
    target = tmp_path / "board.txt"
    assert_bad_input(*run(capsysbinary, "rank", results.path, "--format", "table", "-o", target), "ember-eval[cli]")
    assert not target.exists()


def test_torn_line_warns_on_stderr(tmp_path, capsysbinary):
    results = builtin_results(tmp_path, policies=("greedy",))
    whole = ranking_bytes(compute_ranking(results.campaign, results.episodes())[0])
    results.append(b'{"scenario_id":')
    status, out, err = run(capsysbinary, "rank", results.path)
    assert status == 0
    assert out == whole
    assert (
        err
        == f"ember: warning: {results.path}/episodes.jsonl:4: ignored 15 bytes after the last newline (a torn line)\n"
        + UNVERIFIABLE.replace(" of 9 ", " of 3 ").replace(" 9 name ", " 3 name ")
    )


def _bad_results(tmp_path, line):
    results = builtin_results(tmp_path, policies=("greedy",))
    results.append(line)
    return results


@pytest.mark.parametrize(
    "make, fragments",
    [
        (lambda p: str(p / "nowhere"), ["nowhere: no such directory"]),
        (lambda p: str(p), ["campaign.json: missing: not a results directory"]),
        (lambda p: (p / "campaign.json").write_text("{}\n") and str(p), ["episodes.jsonl: missing"]),
        (
            lambda p: [(p / n).write_text("not json\n") for n in ("campaign.json", "episodes.jsonl")] and str(p),
            ["campaign.json: not a JSON text"],
        ),
        (
            lambda p: (
                [
                    (p / n).write_text(t)
                    for n, t in (("campaign.json", '{"schema_version":"1.0"}'), ("episodes.jsonl", ""))
                ]
                and str(p)
            ),
            ["campaign.json: $: missing key 'campaign'"],
        ),
        (lambda p: _bad_results(p, b"[]\n").path, ["episodes.jsonl:4: $: expected an object"]),
        (
            lambda p: _bad_results(p, canonical_line(failed_row("ghost", "small-room", "sha256:" + "0" * 64, 0))).path,
            ['episodes.jsonl:4: $.policy: "ghost" is not a policy of the campaign'],
        ),
        (
            lambda p: (
                _bad_results(
                    p, canonical_line(ok_row("greedy", hand_metrics("small-room", "sha256:" + "0" * 64, 9)))
                ).path
            ),
            ["episodes.jsonl:4: $: scenario", "with seed 9 is not an episode of the campaign"],
        ),
    ],
    ids=[
        "missing-dir",
        "not-results",
        "no-episodes",
        "campaign-not-json",
        "foreign-campaign",
        "not-a-row",
        "unknown-policy",
        "not-in-campaign",
    ],
)
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsysbinary, make, fragments, fmt):
    where = tmp_path / "in"
    where.mkdir()
    directory = make(where)
    target = tmp_path / "out.json"
    assert_bad_input(*run(capsysbinary, "rank", directory, "-o", target, "--format", fmt), *fragments)
    assert not target.exists()
    assert_bad_input(*run(capsysbinary, "rank", directory), *fragments)


def test_error_names_the_results_directory_path(tmp_path, capsysbinary):
    results = _bad_results(tmp_path, b"{nope\n")
    status, out, err = run(capsysbinary, "rank", results.path)
    assert_bad_input(status, out, err, f"{results.path}/episodes.jsonl:4: not a JSON text")


def test_help_texts(capsys):
    for command in ("rank", "report"):
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        assert "RESULTS_DIR" in capsys.readouterr().out
