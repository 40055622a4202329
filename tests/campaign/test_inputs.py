"""Campaign inputs refused or reported with their place (issue 19 items 2, 6 and 8).

``step_timeout`` is a finite number of seconds, > 0 and at most a day,
never a boolean; a campaign larger than ``MAX_CAMPAIGN_RUNS`` is refused
up front; a submitted record that is not a regular file says what it is.
"""

import os

import pytest

from ember.campaign.spec import MAX_CAMPAIGN_RUNS, load_campaign
from ember.errors import CampaignError

from campaign_processes import by_key, ember_cli, read_rows, write_files

HEAD = 'campaign = "inputs"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1e10", "policies[0].step_timeout: expected at most 86400 seconds (one day), got 10000000000.0."),
        ("86400.5", "policies[0].step_timeout: expected at most 86400 seconds (one day), got 86400.5."),
        ("true", "policies[0].step_timeout: expected a number of seconds, got a boolean True."),
        ("nan", "policies[0].step_timeout: expected a finite number of seconds > 0, got nan."),
        ("-1", "policies[0].step_timeout: expected a finite number of seconds > 0, got -1."),
    ],
)
@pytest.mark.parametrize("source", ['agent = "python3 a.py"', 'python = "mod:make"'])
def test_step_timeout_is_bounded_and_names_its_place(tmp_path, value, expected, source):
    write_files(tmp_path, {"mod.py": "make = lambda scenario: None\n"})
    path = tmp_path / "c.toml"
    path.write_text(HEAD + f'[[policies]]\nname = "p"\n{source}\nstep_timeout = {value}\n')
    with pytest.raises(CampaignError) as raised:
        load_campaign(path)
    assert str(raised.value) == f"{path}: {expected}"


def test_a_day_is_the_longest_step_timeout(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(HEAD + '[[policies]]\nname = "p"\nagent = "python3 a.py"\nstep_timeout = 86400\n')
    assert load_campaign(path).policies[0]["step_timeout"] == 86400.0


def test_ember_run_step_timeout_is_bounded_too():
    done = ember_cli("run", "builtin:small-room", "--agent", "python3 a.py", "--step-timeout", "1e10")
    assert done.returncode == 2 and done.stdout == b""
    assert "the step timeout must be at most 86400 seconds (one day), got '1e10'" in done.stderr.decode()


def test_a_campaign_too_large_is_refused_up_front(tmp_path):
    # 3 scenarios x 1,000,000 seeds x 4 policies: 12 million runs.
    path = tmp_path / "c.toml"
    policies = "".join(f'[[policies]]\nname = "p{i}"\nbuiltin = "greedy"\n' for i in range(4))
    path.write_text(
        'campaign = "big"\nseeds = { start = 0, count = 1000000 }\n'
        'scenarios = ["builtin:small-room", "builtin:office", "builtin:bottleneck"]\n' + policies
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", timeout=120)
    assert done.returncode == 2 and done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    assert line == (
        f"ember: {path}: campaign file: 3,000,000 episodes x 4 policies = 12,000,000 runs; "
        f"at most {MAX_CAMPAIGN_RUNS:,} runs are allowed in one campaign (split it into several campaigns)."
    )
    assert not (tmp_path / "res").exists()


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
