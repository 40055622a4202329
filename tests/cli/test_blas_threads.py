"""``ember metrics`` and ``ember demo`` keep numpy from starting OpenBLAS's thread pool.

The commands do no linear algebra; numpy (the exposure field of large
grids) would start the pool as it is imported.  They set
``OPENBLAS_NUM_THREADS=1`` before anything imports numpy, and keep a value
the user set.  Checked in a fresh process each: the variable as the
command leaves it, and numpy imported by the command itself.
"""

import json
import os
import subprocess
import sys

import pytest

import ember

PROBE = (
    "import contextlib, io, os, sys\n"
    "from ember.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    status = main(sys.argv[1:])\n"
    "print(status, os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)\n"
)


def probe(argv, cwd, preset=None):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    return done.stdout.split()


@pytest.fixture(scope="module")
def large_record(tmp_path_factory):
    # A floor of 4,096 cells or more: its exposure field is the numpy one.
    base = tmp_path_factory.mktemp("blas")
    scenario = ember.load_scenario("builtin:ember-v1/medium-hall-casualty")
    scenario["termination"]["max_steps"] = 5
    path = base / "scenario.json"
    path.write_text(json.dumps(scenario))
    record = base / "run.record"
    ember.run_episode(scenario, "greedy", 0, str(record))
    return base, path, record


def test_metrics_runs_numpy_with_one_blas_thread_unless_the_user_chose(large_record):
    base, scenario, record = large_record
    assert probe(["metrics", str(scenario), str(record)], base) == ["0", "1", "True"]
    assert probe(["metrics", str(scenario), str(record)], base, preset="3") == ["0", "3", "True"]


def test_demo_runs_with_one_blas_thread(large_record):
    base, scenario, _ = large_record
    argv = ["demo", "--scenario", str(scenario), "-o", str(base / "demo.record")]
    assert probe(argv, base)[:2] == ["0", "1"]
