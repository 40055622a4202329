"""The architecture's rules that an import graph cannot show (docs/architecture.md).

The import contracts themselves are checked by ``lint-imports`` in CI
(pyproject.toml); these tests cover what it cannot see.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "ember"
MODULES = sorted(SRC.rglob("*.py"))

# The optional extras (pyproject.toml): `import ember` and `ember metrics` never pay for them.
EXTRAS = (
    "distributed",
    "dask",
    "scipy",
    "matplotlib",
    "gymnasium",
    "pettingzoo",
    "pedpy",
    "shapely",
    "PIL",
    "tabulate",
    "tqdm",
    "zstandard",
)


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported_private_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            is_ember = node.level > 0 or (node.module or "").split(".")[0] == "ember"
            if not is_ember:
                continue
            for alias in node.names:
                if _private(alias.name) or any(_private(part) for part in (node.module or "").split(".")):
                    yield node.lineno, f"from {'.' * node.level}{node.module or ''} import {alias.name}"


def test_the_source_tree_is_where_the_test_looks():
    assert (SRC / "engine.py").is_file() and len(MODULES) > 40


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_is_imported_across_modules(path):
    found = [f"{path.relative_to(SRC)}:{line}: {text}" for line, text in _imported_private_names(path)]
    assert found == [], "a private name is imported from another module: " + "; ".join(found)


def test_the_private_name_check_finds_a_private_import(tmp_path):
    # The check itself can fail: a module importing a private name is reported.
    sample = tmp_path / "sample.py"
    sample.write_text("from .record.frontend import _Hidden\nfrom .grid import public\n", encoding="utf-8")
    assert [text for _, text in _imported_private_names(sample)] == ["from .record.frontend import _Hidden"]


def _extras_loaded(code):
    probe = f"import sys\n{code}\nsys.stderr.write(repr(sorted(m for m in {EXTRAS!r} if m in sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"no output, exit {done.returncode}"


def test_import_ember_never_pays_for_an_optional_extra():
    assert _extras_loaded("import ember") == "[]"


def test_ember_metrics_never_pays_for_an_optional_extra(tmp_path):
    record = tmp_path / "run.record"
    made = f"from ember.cli import main\nraise SystemExit(main(['run', 'builtin:small-room', '-o', {str(record)!r}]))"
    subprocess.run([sys.executable, "-c", made], check=True, timeout=120)
    code = (
        "import contextlib, io\n"
        "from ember.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    status = main(['metrics', 'builtin:small-room', {str(record)!r}])\n"
        "assert status == 0 and '\"safety\"' in out.getvalue(), (status, out.getvalue()[:200])\n"
    )
    assert _extras_loaded(code) == "[]"


def test_the_extras_probe_sees_an_extra_that_is_loaded():
    assert _extras_loaded("import tabulate") == "['tabulate']"
