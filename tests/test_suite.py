"""The suite's own setup: its markers (tests/conftest.py, pyproject.toml) and the command CI runs.

README.md gives the whole suite as the test command, which ``.ci/run``
runs, and the fast tier as ``-m "not slow"``; the markers are given by
``tests/conftest.py`` from what each test uses.
"""

import re
import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent
MARKERS = ("slow", "sandbox", "postgres", "browser")


def _collect(*arguments):
    """``pytest --collect-only`` (quiet by pyproject's addopts) with ``arguments``: (node ids, summary line)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    return [line for line in lines if line.startswith("tests/")], lines[-1]


def test_every_marker_the_conftest_gives_is_registered(pytestconfig):
    registered = [line.split(":", 1)[0] for line in pytestconfig.getini("markers")]
    assert [name for name in MARKERS if name not in registered] == []
    assert "--strict-markers" in pytestconfig.getini("addopts")


def test_the_conftest_gives_only_the_registered_markers(request):
    assert set(conftest.markers_of(request.node)) <= set(MARKERS)


def test_the_fast_tier_is_neither_empty_nor_the_whole_suite():
    _, summary = _collect("-m", "not slow")
    found = re.fullmatch(r"(\d+)/(\d+) tests collected \((\d+) deselected\) in .*", summary)
    assert found is not None, summary
    fast, every, slow = (int(group) for group in found.groups())
    assert every // 2 < fast < every and fast + slow == every


def test_postgres_marks_the_tests_that_start_the_cluster_and_no_sqlite_case():
    faults = (
        "tests/service/test_faults.py::"
        "test_postgresql_stopped_is_503_saying_nothing_of_the_setup_to_anonymous_and_team_callers"
    )
    marked, _ = _collect("-m", "postgres", "tests/service/test_faults.py", "tests/service/test_bad_input.py")
    assert faults in [node.split("[")[0] for node in marked]
    parameters = [node.partition("[")[2] for node in marked]
    assert any(node.startswith("tests/service/test_bad_input.py::") and "postgresql" in node for node in marked)
    assert [node for node, given in zip(marked, parameters) if "sqlite" in given] == []


def test_browser_and_sandbox_mark_their_tests_only():
    files = ("tests/report/test_report_browser.py", "tests/isolation/test_probe.py", "tests/test_canonical.py")
    browser, _ = _collect("-m", "browser", *files)
    sandbox, _ = _collect("-m", "sandbox", *files)
    assert "tests/report/test_report_browser.py::test_report_renders_cleanly_in_chromium" in browser
    assert {node.split("::")[0] for node in browser} == {"tests/report/test_report_browser.py"}
    assert {node.split("::")[0] for node in sandbox} == {"tests/isolation/test_probe.py"}


def test_the_readme_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(\.venv/bin/python -m pytest[^\n]*)\n```", readme)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci_command = ci[ci.index("# The README's test command:") + 1]
    assert commands[0] == ci_command == ".venv/bin/python -m pytest"
