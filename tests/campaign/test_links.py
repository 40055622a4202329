"""isolation.md §2 Links: a policy path EMBER binds never leads out of its campaign folder.

Each attack is a real campaign folder with a real symbolic link, evaluated
by the real command.  On the code before this rule the policy ran and read
what the link points to (another team's agent, a "database" file); now the
command refuses the campaign (exit 2, one line naming the link, nothing run,
no rows), whatever the sandbox mode: the rule is the campaign's.
"""

import os
import shutil
import sys

import pytest

from helpers.campaigns import EXAMPLE_AGENT, assert_one_line_error, ember_cli, snapshot, write_campaign

SECRET = "competitor-secret-database-7731"
HEAD = 'campaign = "links"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'
MODES = ("off", "required")
PYTHON_POLICY = """
from ember.sim.policies import GreedyPolicy

def make(scenario):
    return GreedyPolicy(scenario)
"""


@pytest.fixture
def outside(tmp_path):
    """Another team's folder beside the campaign's: its agent and a database file."""
    other = tmp_path / "other-team"
    other.mkdir()
    shutil.copy(EXAMPLE_AGENT, other / "agent.py")
    (other / "agent.py").write_text(f"# {SECRET}\n" + (other / "agent.py").read_text())
    (other / "database.txt").write_text(SECRET + "\n")
    (other / "module.py").write_text(f"# {SECRET}\n" + PYTHON_POLICY)
    return other


def _policy(entry):
    return HEAD + f'[[policies]]\nname = "attacker"\n{entry}\n'


def _refused(tmp_path, folder, text, mode, link):
    path = write_campaign(folder, text)
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", mode)
    line = assert_one_line_error(done)
    assert f"{path}: policies[0]" in line, line
    assert link in line, line
    assert "outside" in line, line
    assert SECRET.encode() not in done.stderr
    assert snapshot(results) is None  # nothing written: no rows, not even the folder
    return line


def _first_argument_link(folder, outside):
    folder.mkdir()
    os.symlink(outside / "agent.py", folder / "agent.py")
    return _policy(f'agent = "{sys.executable} agent.py"')


def test_the_same_agent_copied_in_runs(tmp_path, outside):
    """The campaign of the first attack with the other team's agent copied in, not linked: it runs."""
    folder = tmp_path / "c"
    text = _first_argument_link(folder, outside)
    os.remove(folder / "agent.py")
    shutil.copy(outside / "agent.py", folder / "agent.py")  # the same bytes, copied in: that is allowed
    path = write_campaign(folder, text)
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1", "--sandbox", "off")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_whose_first_argument_links_out_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    text = _first_argument_link(folder, outside)
    _refused(tmp_path, folder, text, mode, "agent.py is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_reading_a_linked_database_is_refused(tmp_path, outside, mode):
    """``cat database.txt`` with database.txt a link out: the bytes of the target were the agent's answer."""
    folder = tmp_path / "c"
    folder.mkdir()
    os.symlink(outside / "database.txt", folder / "database.txt")
    _refused(tmp_path, folder, _policy('agent = "cat database.txt"'), mode, "database.txt is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_a_files_entry_linking_out_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    folder.mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "agent.py")
    os.symlink(outside, folder / "data")
    text = _policy(f'agent = "{sys.executable} agent.py"\nfiles = ["agent.py", "data"]')
    _refused(tmp_path, folder, text, mode, "data is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_a_link_inside_a_files_folder_pointing_out_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    (folder / "lib" / "deep").mkdir(parents=True)
    shutil.copy(EXAMPLE_AGENT, folder / "lib" / "agent.py")
    os.symlink(outside / "database.txt", folder / "lib" / "deep" / "rows.txt")
    text = _policy(f'agent = "{sys.executable} lib/agent.py"\nfiles = ["lib"]')
    _refused(tmp_path, folder, text, mode, "lib/deep/rows.txt is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_a_python_module_that_is_a_link_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    folder.mkdir()
    os.symlink(outside / "module.py", folder / "stolen.py")
    _refused(tmp_path, folder, _policy('python = "stolen:make"'), mode, "stolen.py is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_a_package_folder_holding_a_link_out_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text(PYTHON_POLICY)
    os.symlink(outside, folder / "pkg" / "weights")
    _refused(tmp_path, folder, _policy('python = "pkg:make"'), mode, "pkg/weights is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_a_package_folder_that_links_out_is_refused(tmp_path, outside, mode):
    folder = tmp_path / "c"
    folder.mkdir()
    (outside / "pkg").mkdir()
    (outside / "pkg" / "__init__.py").write_text(PYTHON_POLICY)
    os.symlink(outside / "pkg", folder / "pkg")
    _refused(tmp_path, folder, _policy('python = "pkg:make"'), mode, "pkg is a symbolic link to")


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_file_argument_outside_the_campaign_folder_is_refused(tmp_path, mode):
    """Under the sandbox such an agent could never start (every episode failed: it exited with status 2)."""
    folder = tmp_path / "c"
    folder.mkdir()
    text = _policy(f'agent = "python3 {EXAMPLE_AGENT}"')
    path = write_campaign(folder, text)
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1", "--sandbox", mode)
    line = assert_one_line_error(done)
    assert f"{path}: policies[0].agent: the agent's file argument {EXAMPLE_AGENT!r} is outside the campaign" in line
    assert snapshot(tmp_path / "res") is None


def test_links_that_stay_inside_and_a_linked_campaign_folder_are_allowed(tmp_path):
    """A link inside a bound folder to a file of that folder, and a campaign folder reached through a link
    (its own path is resolved too), run as any campaign."""
    real = tmp_path / "real"
    (real / "lib").mkdir(parents=True)
    shutil.copy(EXAMPLE_AGENT, real / "lib" / "agent.py")
    os.symlink("agent.py", real / "lib" / "same.py")
    os.symlink(real, tmp_path / "linked")
    text = _policy(f'agent = "{sys.executable} lib/same.py"\nfiles = ["lib"]')
    path = write_campaign(tmp_path / "linked", text)
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1", "--sandbox", "off")
    assert done.returncode == 0, done.stderr


def test_a_bundle_folder_with_a_link_out_is_refused_by_its_run(tmp_path, outside):
    """A hidden-track job runs its bundle as a campaign in the bundle's folder (the service's own campaign file,
    policy entry and scenarios beside it): a link out of the bundle's folder is refused by the same check, even
    one planted after the upload's and the extraction's own refusals of links."""
    from ember.service import jobs
    from ember.service.bundles import extract_bundle
    from ember.service.evaluator import campaign_text, policy_entry

    from helpers.bundles import agent_bundle

    job = tmp_path / "job"
    job.mkdir()
    bundle = agent_bundle(job / ("bundle" + jobs.BUNDLE_SUFFIX))
    agent = job / jobs.AGENT_DIR
    extract_bundle(bundle, agent)
    os.symlink(outside / "database.txt", agent / "notes.txt")
    scenario = ember_scenario_file(job / jobs.SCENARIOS_NAME)
    entry = policy_entry("team.runner", {"agent": ["python3", "agent.py"]}, agent)
    assert entry["files"] == ["agent.py", "ember-agent.toml", "notes.txt"]
    (agent / jobs.CAMPAIGN_NAME).write_text(
        campaign_text("board", [scenario], [(scenario.scenario_id, None, 0)], entry)
    )
    results = job / jobs.RESULTS_NAME
    done = ember_cli("evaluate", agent / jobs.CAMPAIGN_NAME, "-o", results, "--workers", "1")
    line = assert_one_line_error(done)
    assert "policies[0]: notes.txt is a symbolic link to" in line, line
    assert snapshot(results) is None


def ember_scenario_file(folder):
    """A hidden scenario's file as the evaluator writes it (``<id>.json`` beside the job's bundle)."""
    from types import SimpleNamespace

    from ember.canonical import canonical_json
    from ember.scenario import compile_scenario

    compiled = compile_scenario("builtin:small-room")
    folder.mkdir()
    (folder / f"{compiled.scenario_id}.json").write_bytes(canonical_json(compiled.data) + b"\n")
    return SimpleNamespace(scenario_id=compiled.scenario_id)
