"""Nothing but ``ember.results`` names a file or folder of a results directory (results/layout.py).

Every string literal of ``src/ember`` outside ``src/ember/results/`` (code,
messages, help texts; not docstrings or comments) is read with ``ast`` and
must not spell a results directory's name: a message says
``f"{EPISODES_FILE}"``, a path is made by ``layout``.
"""

import ast
import os
import pathlib
import re

import pytest

from ember.results import layout

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "ember"
OWNER = SRC / "results"
NAMES = re.compile(
    r"campaign\.json|episodes\.jsonl|\.torn\b|ranking\.json|statistics\.json"
    r"|\b(records|logs|scenarios)/|^logs$|^\.tmp$|^\.(stderr|stdout)$"
)
# A path of the service's API (``/api/records/SHA256``) names a route, not a file of a results directory.
API_PATH = re.compile(r"/api/[\w{}/.-]*")


def _docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                yield body[0].value


def literals_naming_the_layout(path, root=SRC.parent):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {id(node) for node in _docstrings(tree)}
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        if literal and NAMES.search(API_PATH.sub("", node.value)):
            yield f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"


def test_no_results_directory_name_is_spelled_outside_results():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if OWNER not in path.parents:
            found.extend(literals_naming_the_layout(path))
    assert found == []


def test_the_check_sees_a_name_spelled_by_hand(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Writes ranking.json (a docstring may say so)."""\n'
        'PATH = os.path.join(d, "ranking.json")  # and so may a comment: episodes.jsonl\n'
        'LOG = f"{d}/logs/{policy}"\n'
        'URL = "/api/records/" + sha\n'
        'BOTH = "/api/records/{sha} and records/{sha}"\n'
    )
    found = sorted(line.split(": ", 1)[1] for line in literals_naming_the_layout(sample, tmp_path))
    assert found == sorted(["'ranking.json'", "'/logs/'", "'/api/records/{sha} and records/{sha}'"])


@pytest.mark.parametrize(
    "relative, expected",
    [
        (layout.scenario_file("office-floor"), os.path.join("scenarios", "office-floor.json")),
        (layout.kept_record("g", "office-floor", 3), os.path.join("records", "g", "office-floor", "3.record.gz")),
        (layout.log_file("g", "office-floor", 3, "stderr"), os.path.join("logs", "g", "office-floor", "3.stderr")),
        (layout.TORN_FILE, "episodes.jsonl.torn"),
    ],
)
def test_the_layout_is_campaign_md_section_4(relative, expected):
    assert relative == expected
