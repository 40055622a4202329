"""Campaign file bounds (campaign/campaign_file.py): step_timeout and the campaign's size, named by their place.

``step_timeout`` is a finite number of seconds, > 0 and at most a day,
never a boolean (``ember run --step-timeout`` has the same bound); a
campaign larger than ``MAX_CAMPAIGN_RUNS`` is refused up front.
"""

import pytest

from ember.campaign.campaign_file import MAX_CAMPAIGN_RUNS, load_campaign
from ember.errors import CampaignError

from helpers.campaign_processes import write_files
from helpers.campaigns import ember_cli

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
