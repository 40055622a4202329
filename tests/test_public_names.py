"""The lazily loaded public names of EMBER's packages (PEP 562 ``__getattr__`` over a ``_PUBLIC`` table).

A public name that is also a submodule's name is shadowed by that
submodule as soon as anything imports it first (the import system sets
the package's attribute to the module, and ``__getattr__`` is never asked
again): ``from ember.campaign import evaluate`` then gave a module, and
only in the test orders where something had imported the module before.
"""

import importlib
import pkgutil
import subprocess
import sys

import pytest

import ember

PACKAGES = sorted(
    name
    for name in ["ember", *(m.name for m in pkgutil.walk_packages(ember.__path__, "ember.") if m.ispkg)]
    if "_PUBLIC" in vars(importlib.import_module(name))
)


def test_the_tables_are_found():
    assert {"ember", "ember.campaign"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_public_name_is_a_submodule_name(package):
    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert sorted(set(module._PUBLIC) & submodules) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_each_public_name_is_its_home_modules_object_whatever_was_imported_first(package):
    # A fresh interpreter: every submodule of the package imported first, then each public name asked for.
    code = f"""
import importlib, pkgutil, sys
package = importlib.import_module({package!r})
for found in pkgutil.iter_modules(package.__path__, {package!r} + "."):
    importlib.import_module(found.name)
wrong = []
for name, home in sorted(package._PUBLIC.items()):
    got = getattr(package, name)
    expected = getattr(importlib.import_module({package!r} + "." + home), name)
    if got is not expected:
        wrong.append(f"{{name}}: {{type(got).__name__}}")
print(wrong)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
