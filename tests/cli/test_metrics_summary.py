"""``ember metrics SCENARIO RECORD --format summary``: the lines a person reads first, from the JSON's numbers."""

import json
import subprocess
import sys

import pytest

import ember

from helpers.scenarios import make_scenario


def ember_cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, input=stdin, timeout=120
    )


def expected_lines(m):
    """The summary, written out from the metrics JSON (every number is the JSON's)."""
    safety, time, fire = m["safety"], m["time"], m["fire_exposure"]
    n, width = safety["population"], len(str(safety["population"]))

    def share(count):
        return f"{count / n:.1%}".rjust(6)

    causes = safety["casualties_by_cause"]
    lines = [
        f"Episode {m['scenario_id']}, seed {m['seed']}: {time['episode_steps']:,} steps "
        f"(horizon {time['max_steps']:,}).",
        f"  population           {n}",
        f"  evacuated            {safety['evacuated']:>{width}} of {n}  {share(safety['evacuated'])}",
        f"  casualties           {safety['casualties']:>{width}} of {n}  {share(safety['casualties'])}  "
        f"(moved into the fire {causes['entered_fire']}, caught by its spread {causes['fire_spread']})",
        f"  stranded             {safety['stranded']:>{width}} of {n}  {share(safety['stranded'])}  "
        "(active at the end)",
        f"  time to safety       {time['person_time_to_safety_total']:,} person-steps, mean "
        f"{time['mean_person_time_to_safety']:.2f} steps (non-evacuees count as the horizon, {time['max_steps']:,})",
    ]
    if time["last_evacuation_step"] is not None:
        lines.append(f"  evacuations          steps {time['first_evacuation_step']} to {time['last_evacuation_step']}")
    near = fire["min_fire_distance"]
    where = "no fire while anyone was inside" if near is None else f"nearest fire {near} cell{'s' * (near != 1)}"
    lines.append(
        f"  fire exposure        {fire['exposure_total']:.4g} (sum of 1/distance to the fire), mean "
        f"{fire['mean_exposure']:.4g} per person-step; {where}"
    )
    return lines


@pytest.mark.parametrize(("scenario", "policy", "seed"), [("office", "greedy", 0), ("bottleneck", "stay", 2)])
def test_the_summary_says_the_json_s_numbers(tmp_path, scenario, policy, seed):
    record = tmp_path / "r.record"
    ember.run_episode(ember.load_scenario(f"builtin:{scenario}"), policy, seed, str(record))
    metrics = json.loads(ember_cli("metrics", f"builtin:{scenario}", record).stdout)
    done = ember_cli("metrics", f"builtin:{scenario}", record, "--format", "summary")
    assert (done.returncode, done.stderr) == (0, b"")
    lines = done.stdout.decode().splitlines()
    assert lines[:-2] == expected_lines(metrics)
    assert lines[-2].startswith("  blocked moves        ") and lines[-1].startswith("  exit use             ")
    out = tmp_path / "summary.txt"
    assert ember_cli("metrics", f"builtin:{scenario}", record, "--format", "summary", "-o", out).stdout == b""
    assert out.read_bytes() == done.stdout


def test_a_summary_without_fire_or_evacuations_says_so(tmp_path):
    scenario = make_scenario(1, 4, people={"p": (0, 0)}, exits={"x": (0, 3)}, max_steps=5)
    scenario["fire"]["ignitions"] = []
    path, record = tmp_path / "s.json", tmp_path / "r.record"
    path.write_text(json.dumps(scenario))
    ember.run_episode(scenario, "stay", 0, str(record))
    done = ember_cli("metrics", path, record, "--format", "summary")
    lines = done.stdout.decode().splitlines()
    metrics = json.loads(ember_cli("metrics", path, record).stdout)
    assert lines[:-2] == expected_lines(metrics)
    assert not any(line.startswith("  evacuations") for line in lines)
    assert lines[-3].endswith("; no fire while anyone was inside")
    assert lines[-1] == "  exit use             nobody evacuated"


def test_compact_is_for_json_only():
    done = ember_cli("metrics", "builtin:office", "-", "--format", "summary", "--compact", stdin=b"")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == b"ember: --compact applies only to --format json.\n"
