"""Fixtures of the campaign tests: one results directory evaluated once, and private copies of it."""

import shutil

import pytest

from helpers.campaigns import BASIC, ember_cli, write_campaign


@pytest.fixture(scope="session")
def basic_run(tmp_path_factory):
    """BASIC evaluated once with 2 workers: (campaign folder, results directory), never modified."""
    base = tmp_path_factory.mktemp("basic")
    path = write_campaign(base / "c", BASIC)
    done = ember_cli("evaluate", path, "-o", base / "res", "--workers", "2")
    assert done.returncode == 0, done.stderr
    return base / "c", base / "res"


@pytest.fixture
def basic_copy(basic_run, tmp_path):
    """A private copy of ``basic_run``: (campaign path, results directory)."""
    folder, results = basic_run
    shutil.copytree(folder, tmp_path / "c")
    shutil.copytree(results, tmp_path / "res")
    return tmp_path / "c" / "campaign.toml", tmp_path / "res"
