"""The folders on the way never matter (isolation.md §2, Modes): a campaign inside a 0700 folder, run with a
Python under a 0700 /root, evaluates with ``--sandbox required`` and no permission on the host changes."""

import os
import shlex
import shutil
import sys

from helpers.hostile import COMPETITOR, SEEDS, evaluate, honest_rows
from helpers.sandboxes import modes, private_folder, write_file

EXAMPLE_AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples", "greedy_agent.py")


def _folders_on_the_way(path):
    found, current = [], os.path.abspath(path)
    while current != os.path.dirname(current):
        found.append(current)
        current = os.path.dirname(current)
    return found


def test_a_campaign_in_a_0700_folder_with_a_python_under_a_0700_home_runs_sandboxed(tmp_path):
    prefix = os.path.realpath(sys.base_prefix)
    with private_folder() as folder:
        private = os.path.dirname(folder)
        # What the test is about: nothing on the way to the campaign or to the Python lets the sandbox's uid pass.
        assert os.stat(private).st_mode & 0o777 == 0o700
        assert any(os.stat(path).st_mode & 0o001 == 0 for path in _folders_on_the_way(prefix)), prefix
        write_file(folder, "competitor.py", COMPETITOR)
        shutil.copy(EXAMPLE_AGENT, os.path.join(folder, "greedy_agent.py"))
        os.chmod(os.path.join(folder, "greedy_agent.py"), 0o644)
        seeds = ", ".join(map(str, SEEDS))
        campaign = write_file(
            folder,
            "campaign.toml",
            f'campaign = "private"\nseeds = [{seeds}]\nscenarios = ["builtin:small-room"]\n'
            '[[policies]]\nname = "competitor"\npython = "competitor:make"\n'
            f'[[policies]]\nname = "agent"\nagent = "{shlex.join([sys.executable, "greedy_agent.py"])}"\n',
        )
        watched = [folder, prefix, os.path.realpath(sys.prefix)]
        before = {path: mode for root in watched for path, mode in modes(root).items()}
        done = evaluate(campaign, tmp_path / "R", "--sandbox", "required")
        after = {path: mode for root in watched for path, mode in modes(root).items()}
    assert done.returncode == 0, done.stderr
    rows = honest_rows(tmp_path / "R")
    assert sorted(rows) == sorted((policy, seed) for policy in ("agent", "competitor") for seed in SEEDS)
    assert {key: row["status"] for key, row in rows.items()} == dict.fromkeys(rows, "ok")
    for seed in SEEDS:
        assert rows[("agent", seed)]["metrics"] == rows[("competitor", seed)]["metrics"]  # both play greedy
    assert {path: mode for path, mode in after.items() if path in before} == before
