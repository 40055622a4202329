"""The command line through real OS pipes: ``ember run ... | ember metrics ... -``."""

import io
import subprocess
import sys

import ember

from helpers.strict import assert_same_json

OFFICE = ember.load_scenario("builtin:office")


def test_cli_pipe_run_into_metrics():
    """ember run ... | ember metrics ... - through a real OS pipe."""
    cmd = (
        f"{sys.executable} -m ember.cli run builtin:office --policy greedy --seed 4 | "
        f"{sys.executable} -m ember.cli metrics builtin:office - --compact"
    )
    done = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    out = io.BytesIO()
    ember.run_episode(OFFICE, "greedy", 4, out)
    assert_same_json(result, ember.episode_metrics(OFFICE, out.getvalue()).to_dict())
    assert done.stdout.count(b"\n") == 1  # --compact: one line
