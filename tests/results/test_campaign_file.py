"""One reader of campaign files (results/campaign_file.py) for every command that reads one.

A FIFO, a device or a directory given as the campaign file is refused at
once with its path (a blocking open would hang the command: each run is a
real process under a timeout), and so is a file over the size cap.  The
commands are found in the command table: every option or argument whose
destination is ``campaign``.
"""

import argparse
import os

import pytest

from ember.cli.table import COMMANDS
from ember.results import campaign_file

from helpers.results_dirs import ember_cli, in_process, snapshot

#: Each command that reads a campaign file: argv for (campaign file, results directory).
CAMPAIGN_READERS = {
    "evaluate": lambda c, r: ["evaluate", c, "-o", r],
    "verify": lambda c, r: ["verify", r, "--campaign", c],
}


def _fifo(target):
    os.mkfifo(target)


def _dev_zero(target):
    os.symlink("/dev/zero", target)


def _directory(target):
    os.mkdir(target)


STRANGE = {
    "fifo": (_fifo, "is a FIFO, expected a regular file"),
    "dev-zero": (_dev_zero, "is a character device, expected a regular file"),
    "directory": (_directory, "is a directory, expected a regular file"),
}


def test_every_command_reading_a_campaign_file_is_listed():
    readers = set()
    for row in COMMANDS:
        parser = argparse.ArgumentParser(prog=row.name)
        row.arguments(parser)
        usage = parser.format_usage()
        if "CAMPAIGN" in usage or "--campaign" in usage:
            readers.add(row.name)
    assert readers == set(CAMPAIGN_READERS)


@pytest.mark.parametrize("command", sorted(CAMPAIGN_READERS))
@pytest.mark.parametrize("kind", sorted(STRANGE))
def test_a_campaign_file_that_is_no_regular_file_is_refused_at_once(kept_copy, tmp_path, command, kind):
    _, results = kept_copy
    make, reason = STRANGE[kind]
    strange = tmp_path / "strange.toml"
    make(strange)
    target = results if command == "verify" else tmp_path / "new-results"
    before = snapshot(results)
    done = ember_cli(*CAMPAIGN_READERS[command](strange, target), timeout=60)  # a hang fails, never blocks
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (2, b""), err
    assert err.startswith(f"ember: {strange}: ") and err.count("\n") == 1 and reason in err, err
    assert snapshot(results) == before
    assert not (tmp_path / "new-results").exists()


@pytest.mark.parametrize("command", sorted(CAMPAIGN_READERS))
def test_a_campaign_file_over_the_cap_is_refused(kept_copy, tmp_path, command, monkeypatch):
    path, results = kept_copy
    size = len(path.read_bytes())
    monkeypatch.setattr(campaign_file, "MAX_CAMPAIGN_FILE_BYTES", size - 1)
    target = results if command == "verify" else tmp_path / "new-results"
    status, out, err = in_process(*CAMPAIGN_READERS[command](path, target))
    assert (status, out) == (2, "")
    assert err.startswith(f"ember: {path}: ") and f"longer than {size - 1:,} bytes" in err, err
    assert not (tmp_path / "new-results").exists()
