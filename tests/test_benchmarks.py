"""The scripts of benchmarks/, examples/ and scripts/ import only names EMBER has.

They are run by hand, not by the suite, and most import inside functions
(the part a row measures): a module renamed or moved leaves them failing
at the first run. Every ``from ember... import NAME`` anywhere in them is
resolved here.
"""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(path for folder in ("benchmarks", "examples", "scripts") for path in (ROOT / folder).rglob("*.py"))


def ember_imports(path):
    """(line, module, name or None) of every import of an ``ember`` module in the file at ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "ember":
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names if alias.name.split(".")[0] == "ember"]
    return found


def test_there_are_scripts_to_check():
    assert any(ember_imports(path) for path in SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_ember_name_a_script_imports_exists(path):
    missing = []
    for line, module, name in ember_imports(path):
        try:
            loaded = importlib.import_module(module)
        except ImportError as error:
            missing.append(f"{path.name}:{line}: {module}: {error}")
            continue
        if name is not None and not hasattr(loaded, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{path.name}:{line}: {module} has no {name!r}")
    assert missing == []
