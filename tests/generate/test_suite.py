"""`ember suite` needs no extra: tomli-w is a core dependency (issue 18).

The test runs ``ember suite ember-v1`` in a process where every package
that only an optional extra brings is made unimportable, as on a plain
``pip install ember-eval``, and checks the campaign file it writes.
"""

import importlib.metadata
import pathlib
import re
import subprocess
import sys

from ember.generate.suite import campaign

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"


def requirement_name(requirement):
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def project():
    return tomllib.loads(PYPROJECT.read_text())["project"]


def extra_only_modules():
    """Top-level import names of every distribution an extra lists and the core dependencies do not."""
    core = {requirement_name(r) for r in project()["dependencies"]}
    extras = {
        requirement_name(r)
        for requirements in project()["optional-dependencies"].values()
        for r in requirements
        if not r.startswith("ember-eval")
    }
    distributions = importlib.metadata.packages_distributions()
    return sorted(
        module
        for module, names in distributions.items()
        if any(name.lower().replace("_", "-") in extras - core for name in names)
    )


def test_tomli_w_is_a_core_dependency_and_suite_an_alias_of_it():
    core = [requirement_name(r) for r in project()["dependencies"]]
    assert "tomli-w" in core
    assert [requirement_name(r) for r in project()["optional-dependencies"]["suite"]] == ["tomli-w"]


def test_ember_suite_runs_without_any_extra(tmp_path):
    hidden = extra_only_modules()
    assert "tqdm" in hidden and "tomli_w" not in hidden  # the hiding itself is what we think it is
    program = (
        "import sys\n"
        f"for name in {hidden!r}:\n"
        "    sys.modules[name] = None  # an import of it fails as if it were not installed\n"
        "from ember.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "v1.toml"
    done = subprocess.run(
        [sys.executable, "-c", program, "suite", "ember-v1", "-o", str(out)], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (0, "")
    written = tomllib.loads(out.read_text())
    assert written == campaign("ember-v1")
    assert len(written["scenarios"]) == 24
