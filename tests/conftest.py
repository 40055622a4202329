"""pytest's conftest for the whole suite: fixtures and hooks only.

Shared plain helpers live in ``tests/helpers/`` (``from helpers.scenarios
import make_scenario``); this file's directory is on ``sys.path`` (pytest's
default "prepend" import mode), which is what makes ``helpers`` importable
from every test folder.

The markers of ``pyproject.toml`` are given here, by what a test uses, so
that no test file carries them: ``pytest -m "not slow"`` is the fast tier
(README.md), ``-m "not postgres and not browser"`` leaves out what needs
PostgreSQL or Chromium.
"""

import pytest

# Fixtures that start a throw-away PostgreSQL cluster (tests/service/conftest.py) or Chromium (helpers.browser).
POSTGRES_FIXTURES = frozenset({"postgres"})
BROWSER_FIXTURES = frozenset({"browser", "chromium_path"})
# The backend parameter of the service fixtures (``database``, ``board``): this value makes them ask for
# ``postgres`` at run time, which ``item.fixturenames`` cannot show.
POSTGRES_PARAMETER = "postgresql"

# Test modules (or single tests, as node-id prefixes) that run policies in the bubblewrap sandbox: the sandbox's
# own tests, and those whose campaigns, runs or hidden jobs start it.
SANDBOX = ("tests/isolation/",)

# Tests that take about 2 s or more each (measured with ``--durations=0``), as node-id prefixes: a folder, a
# module or one test (all of its parameters).  Re-measure and edit this list when a test grows or shrinks.
SLOW = ()


def _uses_postgres(item):
    if POSTGRES_FIXTURES & set(item.fixturenames):
        return True
    callspec = getattr(item, "callspec", None)
    values = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == POSTGRES_PARAMETER for value in values)


def markers_of(item):
    """The names of the markers ``item`` gets, by the fixtures it uses and where it is."""
    nodeid = item.nodeid
    names = []
    if nodeid.startswith(SLOW):
        names.append("slow")
    if nodeid.startswith(SANDBOX):
        names.append("sandbox")
    if _uses_postgres(item):
        names.append("postgres")
    if BROWSER_FIXTURES & set(item.fixturenames):
        names.append("browser")
    return names


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in markers_of(item):
            item.add_marker(getattr(pytest.mark, name))
