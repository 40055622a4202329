"""Submitted records (campaign/episode.py): a path that is not a regular file says what it is, never opened."""

import os

from helpers.campaign_processes import write_files
from helpers.campaigns import by_key, ember_cli, read_rows


def test_a_submitted_record_that_is_not_a_file_says_what_it_is(tmp_path):
    folder = tmp_path / "c"
    sub = folder / "subs" / "small-room"
    sub.mkdir(parents=True)
    os.mkfifo(sub / "0.record")  # opening it would block: it is never opened
    (sub / "1.record.gz").mkdir()
    os.symlink("/dev/zero", sub / "2.record.zst")
    os.symlink("/nowhere", sub / "3.record")  # a dangling link is no record at all
    path = (
        write_files(
            folder,
            {
                "campaign.toml": 'campaign = "subs"\nseeds = [0, 1, 2, 3]\nscenarios = ["builtin:small-room"]\n'
                '[[policies]]\nname = "subs"\nrecords = "subs"\n'
            },
        )
        / "campaign.toml"
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", timeout=120)
    assert done.returncode == 0, done.stderr
    errors = {seed: row["error"] for (_, _, seed), row in by_key(read_rows(tmp_path / "res")).items()}
    assert errors == {
        0: "subs/small-room/0.record is a FIFO, not a regular file: a submitted record is a file.",
        1: "subs/small-room/1.record.gz is a directory, not a regular file: a submitted record is a file.",
        2: "subs/small-room/2.record.zst is a character device, not a regular file: a submitted record is a file.",
        3: "no submitted record subs/small-room/3.record (nor .record.gz, .record.zst).",
    }
