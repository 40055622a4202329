"""pytest's conftest for the whole suite: fixtures and hooks only.

Shared plain helpers live in ``tests/helpers/`` (``from helpers.scenarios
import make_scenario``); this file's directory is on ``sys.path`` (pytest's
default "prepend" import mode), which is what makes ``helpers`` importable
from every test folder.
"""
