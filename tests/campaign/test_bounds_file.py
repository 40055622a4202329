"""bounds.md §5: ``ember bounds RESULTS_DIR`` writes bounds.jsonl in K's order; ``ember verify`` recomputes it."""

import json

from ember.bounds import bounds_line
from ember.campaign.bounds import line_key
from ember.scenario import compile_scenario

from helpers.campaigns import BASIC, TINY, ember_cli, write_campaign
from helpers.dask_processes import dask_processes

SMALL_HASH = compile_scenario("builtin:small-room").hash


def expected_bytes():
    # BASIC's K: small-room with seeds 0 and 1, then tiny.json with seed 4.
    return b"".join([bounds_line("builtin:small-room", 0), bounds_line("builtin:small-room", 1), bounds_line(TINY, 4)])


def test_bounds_of_a_results_directory_then_verify(basic_copy):
    campaign, results = basic_copy
    done = ember_cli("bounds", results)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"" and done.stderr == b""
    assert (results / "bounds.jsonl").read_bytes() == expected_bytes()
    checked = ember_cli("verify", results, "--campaign", campaign, "--allow-unverifiable")
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.endswith(b"; bounds.jsonl recomputed: identical.\n")


def test_verify_names_the_first_differing_line(basic_copy):
    campaign, results = basic_copy
    lines = expected_bytes().splitlines(keepends=True)
    changed = json.loads(lines[1])
    changed["evacuated_max"] -= 1
    (results / "bounds.jsonl").write_bytes(lines[0] + json.dumps(changed).encode() + b"\n" + lines[2])
    checked = ember_cli("verify", results, "--campaign", campaign, "--allow-unverifiable")
    assert checked.returncode == 1
    text = checked.stdout.decode()
    assert f"{results / 'bounds.jsonl'}: mismatched: line 2 differs from its recomputation " in text
    (results / "bounds.jsonl").write_bytes(b"".join(lines[:2]))
    checked = ember_cli("verify", results, "--campaign", campaign, "--allow-unverifiable")
    assert checked.returncode == 1
    assert "bounds.jsonl: mismatched: line 3: the file has 2 lines, the recomputation 3" in checked.stdout.decode()


def test_seeds_do_not_apply_to_a_results_directory(basic_copy):
    _, results = basic_copy
    done = ember_cli("bounds", results, "--seed", "0")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("ember: --seed does not apply to a results directory")
    assert not (results / "bounds.jsonl").exists()


def test_a_resume_that_adds_keys_removes_bounds_that_no_longer_cover_k(basic_copy):
    campaign, results = basic_copy
    assert ember_cli("bounds", results).returncode == 0
    again = ember_cli("evaluate", campaign, "-o", results)
    assert again.returncode == 0, again.stderr
    assert (results / "bounds.jsonl").read_bytes() == expected_bytes()  # the same K: still covered
    campaign.write_text(campaign.read_text().replace("seeds = [0, 1]", "seeds = [0, 1, 2]"))
    grown = ember_cli("evaluate", campaign, "-o", results)
    assert grown.returncode == 0, grown.stderr
    assert not (results / "bounds.jsonl").exists()


def test_evaluate_with_bounds_computes_each_key_once_beside_the_episodes(tmp_path):
    path = write_campaign(tmp_path / "c", BASIC)
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--bounds")
    assert done.returncode == 0, done.stderr
    assert (results / "bounds.jsonl").read_bytes() == expected_bytes()
    # A resume that adds a key computes its line alone: the lines already there are kept as they are.
    lines = expected_bytes().splitlines(keepends=True)
    marked = json.loads(lines[0])
    marked["population"] = 99  # not a value EMBER would compute: it shows the line was not computed again
    (results / "bounds.jsonl").write_bytes(json.dumps(marked).encode() + b"\n" + b"".join(lines[1:]))
    path.write_text(path.read_text().replace("seeds = [0, 1]", "seeds = [0, 1, 2]"))
    again = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--bounds")
    assert again.returncode == 0, again.stderr
    written = (results / "bounds.jsonl").read_bytes().splitlines(keepends=True)
    assert [line_key(line) for line in written] == [
        (SMALL_HASH, 0),
        (SMALL_HASH, 1),
        (SMALL_HASH, 2),
        (compile_scenario(TINY).hash, 4),
    ]
    assert json.loads(written[0])["population"] == 99
    assert written[1:] == [lines[1], bounds_line("builtin:small-room", 2), lines[2]]


def test_evaluate_with_bounds_on_a_dask_cluster(tmp_path):
    path = write_campaign(tmp_path / "c", BASIC)
    with dask_processes(tmp_path / "cluster", workers=2) as cluster:
        done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--scheduler", cluster.address, "--bounds")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "res" / "bounds.jsonl").read_bytes() == expected_bytes()
