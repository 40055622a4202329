"""A policy's code identity (campaign.md, Changed in 1.1): campaign.json's ``code``, and resumes that keep it.

The hash is checked against one computed here on its own (``expected_code``:
hashlib over the files); every run is the real command in its own process.
"""

import json
import os
import shutil
import sys

from ember.results import read_results

from helpers.campaigns import EXAMPLE_AGENT, ember_cli, expected_code, snapshot, write_campaign

HEAD = 'campaign = "code"\nseeds = [0, 1]\nscenarios = ["builtin:small-room"]\n'
PACKAGE_INIT = """
from ember.sim.policies import GreedyPolicy

def make(scenario):
    return GreedyPolicy(scenario)
"""


def _evaluate(path, results, *flags):
    return ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", "off", *flags)


def _refusal(done):
    """The one error line of a refused run (after the warning that ``--sandbox off`` gives first)."""
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = [line for line in done.stderr.decode().splitlines() if "--sandbox off:" not in line]
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


def _campaign(folder):
    """An agent (default files: its first argument), an agent with its program under the folder and a
    ``files`` folder, and a python package with a sub-module, a data file and a ``__pycache__``."""
    folder.mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "agent.py")
    (folder / "bin").mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "bin" / "run.py")
    (folder / "bin" / "weights.txt").write_text("0.5\n")
    (folder / "run.sh").write_text(f'#!/bin/sh\nexec {sys.executable} bin/run.py "$@"\n')
    os.chmod(folder / "run.sh", 0o755)
    (folder / "pkg" / "sub" / "__pycache__").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text(PACKAGE_INIT)
    (folder / "pkg" / "sub" / "__init__.py").write_text("")
    (folder / "pkg" / "sub" / "table.json").write_text("[1, 2]\n")
    (folder / "pkg" / "sub" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0compiled")
    text = (
        HEAD
        + f'[[policies]]\nname = "plain"\nagent = "{sys.executable} agent.py"\n'
        + '[[policies]]\nname = "wrapped"\nagent = "./run.sh"\nfiles = ["run.sh", "bin"]\n'
        + '[[policies]]\nname = "pack"\npython = "pkg:make"\n'
        + '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
    )
    return write_campaign(folder, text)


def _codes(results):
    value = json.loads((results / "campaign.json").read_bytes())
    return {policy["name"]: policy.get("code") for policy in value["policies"]}


def test_campaign_json_holds_each_policys_code_as_specified(tmp_path):
    path = _campaign(tmp_path / "c")
    results = tmp_path / "res"
    done = _evaluate(path, results)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "c"
    expected = {
        "plain": expected_code(folder, "agent.py"),
        "wrapped": expected_code(folder, "run.sh", "bin"),
        "pack": expected_code(folder, "pkg"),
        "greedy": None,
    }
    assert _codes(results) == expected
    # __pycache__ is left out: the package's code is its three files
    assert expected["pack"] == expected_code(folder, "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/table.json")
    for name in ("plain", "wrapped", "pack"):
        assert f"ember: policy {name}: code {expected[name]}\n".encode() in done.stderr
    rows = [json.loads(line) for line in (results / "episodes.jsonl").read_bytes().splitlines()]
    assert [row["status"] for row in rows] == ["ok"] * 8


def test_a_resume_whose_code_changed_is_refused_naming_the_file(tmp_path):
    path = _campaign(tmp_path / "c")
    results = tmp_path / "res"
    assert _evaluate(path, results).returncode == 0
    before = snapshot(results)
    (tmp_path / "c" / "pkg" / "sub" / "table.json").write_text("[1, 3]\n")
    done = _evaluate(path, results, "--retry-failed")
    line = _refusal(done)
    assert "policy pack's code changed since its rows were written: pkg/sub/table.json has SHA-256 " in line, line
    assert snapshot(results) == before
    # a file added to a bound folder is a change too
    (tmp_path / "c" / "pkg" / "sub" / "table.json").write_text("[1, 2]\n")
    (tmp_path / "c" / "bin" / "extra.py").write_text("")
    line = _refusal(_evaluate(path, results))
    assert "policy wrapped's code changed since its rows were written: bin/extra.py is new" in line, line
    os.remove(tmp_path / "c" / "bin" / "extra.py")
    weights = (tmp_path / "c" / "bin" / "weights.txt").read_bytes()
    os.remove(tmp_path / "c" / "bin" / "weights.txt")
    line = _refusal(_evaluate(path, results))
    assert "policy wrapped's code changed since its rows were written: bin/weights.txt is gone" in line, line
    (tmp_path / "c" / "bin" / "weights.txt").write_bytes(weights)
    assert snapshot(results) == before
    assert _evaluate(path, results).returncode == 0  # the same code again: resumed


def _before_1_1(results):
    """Make ``results`` what EMBER wrote before campaign 1.1: no ``code`` in campaign.json, no code lists."""
    value = json.loads((results / "campaign.json").read_bytes())
    for policy in value["policies"]:
        policy.pop("code", None)
    (results / "campaign.json").write_bytes(
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    )
    shutil.rmtree(results / "code")


def test_a_directory_made_before_1_1_resumes_only_with_adopt_code(tmp_path):
    path = _campaign(tmp_path / "c")
    results = tmp_path / "res"
    assert _evaluate(path, results, "--keep-records").returncode == 0
    _before_1_1(results)
    read_results(results)  # a campaign.json without code is one the results layer reads
    verified = ember_cli("verify", results)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    before = snapshot(results)
    line = _refusal(_evaluate(path, results))
    assert "policies[0] (plain) has no code" in line and "--adopt-code" in line, line
    assert snapshot(results) == before
    done = _evaluate(path, results, "--adopt-code")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "c"
    code = expected_code(folder, "agent.py")
    assert (
        f"ember: policy plain: campaign.json had no code for its rows (written before campaign 1.1); "
        f"--adopt-code recorded today's code {code}.".encode()
        in done.stderr
    )
    assert _codes(results)["plain"] == code
    assert _codes(results)["pack"] == expected_code(folder, "pkg")
    verified = ember_cli("verify", results)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert _evaluate(path, results).returncode == 0  # adopted once: a plain resume from then on
