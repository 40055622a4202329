"""The worked example of docs/interop.md (examples/pedpy_bottleneck.py) runs and agrees with EMBER."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):  # PedPy needs Python 3.11; CI's Python has it, so there this runs
    pytest.importorskip("pedpy", reason="PedPy needs Python 3.11 or later")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pedpy_bottleneck.py"


def test_the_bottleneck_example_draws_its_picture(tmp_path):
    picture = tmp_path / "bottleneck.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), MPLCONFIGDIR=str(tmp_path / "mpl"))
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "-o", str(picture)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("evacuations per exit, EMBER: "))
    ember_counts, pedpy_counts = (
        ast.literal_eval(part) for part in line[len("evacuations per exit, EMBER: ") :].split("  PedPy: ")
    )
    assert ember_counts == pedpy_counts and sum(ember_counts.values()) > 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
