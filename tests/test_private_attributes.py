"""No private attribute of another object is read anywhere in src/, the standard library's included.

An attribute whose name starts with one underscore may be used on
``self`` or ``cls`` only: ``x._name`` on anything else (a standard library
object such as ``ProcessPoolExecutor._processes``, another module's
object) reaches into an implementation that may change without notice.
``os._exit`` is the documented exception (it is public API).
"""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "ember"
ALLOWED = {("os", "_exit")}


def private_reads(source):
    """(line, text) of every ``x._name`` in ``source`` where x is not self or cls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        base = node.value
        if isinstance(base, ast.Name) and (base.id in ("self", "cls") or (base.id, name) in ALLOWED):
            continue
        found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_check_finds_what_it_looks_for():
    source = "executor._processes\nself._executor._processes\nself._own\nos._exit(0)\nx.__class__\n"
    assert private_reads(source) == [(1, "executor._processes"), (2, "self._executor._processes")]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_attribute_of_another_object(path):
    assert private_reads(path.read_text()) == []
