"""``ember bounds`` (bounds.md §4): canonical lines, byte for byte; bad input; witnesses through the CLI."""

import json
import subprocess
import sys

import pytest

from ember.canonical import canonical_json
from ember.scenario import compile_scenario

from helpers.scenarios import make_scenario


def ember_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, timeout=timeout)


def expected_line(name, seed, evacuated, casualties, stable):
    sc = compile_scenario(name)
    return canonical_json(
        {
            "bounds_version": "1.0",
            "scenario_id": sc.scenario_id,
            "scenario_hash": sc.hash,
            "seed": seed,
            "population": len(sc.person_ids),
            "evacuated_max": evacuated,
            "casualties_min": casualties,
            "fire_stable_step": stable,
            "limit": None,
        }
    )


def test_the_line_is_the_canonical_object_in_sorted_key_order():
    done = ember_cli("bounds", "builtin:ember-v1/small-bottleneck-block", "--seed", "0")
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert done.stdout == expected_line("builtin:ember-v1/small-bottleneck-block", 0, 33, 17, 73) + b"\n"
    assert done.stdout.startswith(b'{"bounds_version":"1.0","casualties_min":17,"evacuated_max":33,')


def test_one_line_per_seed_in_the_order_given_and_o_writes_them(tmp_path):
    name = "builtin:small-room"
    done = ember_cli("bounds", name, "--seed", "5", "--seed", "0", "--seed", "5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [json.loads(line)["seed"] for line in lines] == [5, 0, 5]
    out = tmp_path / "b.jsonl"
    written = ember_cli("bounds", name, "--seed", "5", "--seed", "0", "--seed", "5", "-o", out)
    assert written.returncode == 0 and written.stdout == b"" and written.stderr == b""
    assert out.read_bytes() == done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["builtin:small-room"],
        ["builtin:small-room", "--seed", "-1"],
        ["builtin:small-room", "--seed", str(2**64)],
        ["builtin:small-room", "--seed", "1_0"],
        ["builtin:small-room", "--seed", "07"],
        ["builtin:small-room", "--seed", "x"],
        ["builtin:no-such", "--seed", "0"],
        ["builtin:small-room", "--seed", "0", "--seed", "1", "--witness", "w"],
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_on_stdout(tmp_path, args):
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "bounds", *args], capture_output=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize(
    "name, evacuated, casualties",
    [("builtin:ember-v1/small-bottleneck-block", 33, 17), ("builtin:ember-v1/small-office-casualty", 19, 0)],
)
def test_builtin_witnesses_replay_and_measure_the_bounds(tmp_path, name, evacuated, casualties):
    done = ember_cli("bounds", name, "--seed", "0", "--witness", tmp_path / "w")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert (line["evacuated_max"], line["casualties_min"]) == (evacuated, casualties)
    for record, key, value in (
        ("evacuated.record", "evacuated", evacuated),
        ("casualties.record", "casualties", casualties),
    ):
        path = tmp_path / "w" / record
        assert ember_cli("replay", name, path).returncode == 0
        metrics = ember_cli("metrics", name, path)
        assert metrics.returncode == 0, metrics.stderr
        assert json.loads(metrics.stdout)["safety"][key] == value


def test_no_witness_over_the_limit_writes_nothing(tmp_path):
    scenario = make_scenario(5, 5, people={"a": (2, 2)}, exits={"x": (0, 0)}, max_steps=2**31 - 1)
    path = tmp_path / "long.json"
    path.write_text(json.dumps(scenario))
    done = ember_cli("bounds", path, "--seed", "0", "--witness", tmp_path / "w")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("ember: no witness: |open| x H = 25 x 2147483647 = ")
    assert not (tmp_path / "w").exists()
    # The bounds themselves are there: the shortcut needs only the steps to fire_stable_step.
    assert json.loads(ember_cli("bounds", path, "--seed", "0").stdout)["evacuated_max"] == 1
