"""Fixtures of the results-layer tests: a real results directory of one ``ember evaluate --keep-records`` run.

The campaign (``helpers.results_dirs``) has built-in policies (records
kept), a ``records`` entry (records submitted next to the campaign file,
one of them gzip'ed) and a scenario given by path, so every way ``ember
verify`` finds a record and a scenario is there.  ``builtin:office`` has
casualties under every policy.
"""

import shutil

import pytest

from helpers.results_dirs import ember_cli, write_campaign_folder


@pytest.fixture(scope="session")
def kept_campaign(tmp_path_factory):
    """(campaign file, results directory) of a finished --keep-records run; copy before changing it."""
    base = tmp_path_factory.mktemp("kept")
    path = write_campaign_folder(base / "c")
    results = base / "res"
    done = ember_cli("evaluate", path, "-o", results, "--keep-records", "--workers", "2", timeout=300)
    assert done.returncode == 0, done.stderr
    return path, results


@pytest.fixture
def kept_copy(kept_campaign, tmp_path):
    """A private copy of ``kept_campaign``: (campaign file, results directory)."""
    path, results = kept_campaign
    shutil.copytree(path.parent, tmp_path / "c")
    shutil.copytree(results, tmp_path / "res")
    return tmp_path / "c" / "campaign.toml", tmp_path / "res"
