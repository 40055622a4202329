"""``ember bundle DIR -o FILE`` (a bundle the service's own checks accept, reproducible) and ``ember bundle
check FILE --scenario S`` (the bundle run here, in the sandbox, on a public episode, as a job runs it)."""

import os

import pytest

from ember.service.config import ServiceLimits
from ember.service.hidden.bundles import check_bundle

from helpers.bundles import PYTHON_POLICY, python_bundle
from helpers.service import ember

RAISING = "def make_policy(scenario):\n    raise RuntimeError('no policy today')\n"


def folder(tmp_path, files):
    made = tmp_path / "bundle"
    made.mkdir()
    for name, text in files.items():
        (made / name).parent.mkdir(parents=True, exist_ok=True)
        (made / name).write_text(text)
    return made


def walker(tmp_path, policy=PYTHON_POLICY):
    return folder(
        tmp_path, {"ember-agent.toml": 'name = "walker"\npython = "walker:make_policy"\n', "walker.py": policy}
    )


def test_a_bundle_made_from_a_folder_passes_the_services_checks_and_is_reproducible(tmp_path):
    source = walker(tmp_path)
    (source / "data").mkdir()
    (source / "data" / "table.txt").write_text("1 2 3\n")
    done = ember("bundle", source, "-o", tmp_path / "a.tar.gz")
    assert done.stdout == "" and "policy walker (python); the service's checks pass" in done.stderr
    ember("bundle", source, "-o", tmp_path / "b.tar.gz")
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()
    manifest, names = check_bundle(str(tmp_path / "a.tar.gz"), "alpha", ServiceLimits())
    assert manifest.name == "walker" and names == ["data", "data/table.txt", "ember-agent.toml", "walker.py"]


@pytest.mark.parametrize(
    "case, said",
    [
        ("link", "a symbolic link"),
        ("no manifest", "no ember-agent.toml at its top level"),
        ("no module", "the service would refuse it: the bundle: ember-agent.toml: python: no module walker"),
        ("long name", "the service would refuse it: the bundle: ember-agent.toml: name:"),
        ("reserved", "a name the service keeps for itself"),
    ],
)
def test_a_folder_the_service_would_refuse_is_one_line_and_no_file(tmp_path, case, said):
    source = walker(tmp_path)
    if case == "link":
        (source / "elsewhere").symlink_to("/etc/passwd")
    elif case == "no manifest":
        os.remove(source / "ember-agent.toml")
    elif case == "no module":
        os.remove(source / "walker.py")
    elif case == "long name":
        (source / "ember-agent.toml").write_text(f'name = "{"w" * 60}"\npython = "walker:make_policy"\n')
    else:
        (source / "ember-job.toml").write_text("")
    out = tmp_path / "out.tar.gz"
    done = ember("bundle", source, "-o", out, check=False)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert said in done.stderr and not out.exists()


def test_check_runs_the_bundle_in_the_sandbox_on_a_public_episode(tmp_path):
    good = python_bundle(tmp_path / "good.tar.gz")
    done = ember("bundle", "check", good, "--scenario", "builtin:office")
    assert done.stdout.startswith("ember bundle check: walker on builtin:office seed 0, in the sandbox: ok (")
    bad = python_bundle(tmp_path / "bad.tar.gz", policy=RAISING)
    failed = ember("bundle", "check", bad, "--scenario", "builtin:office", "--seed", "3", check=False)
    assert failed.returncode == 1 and "walker on builtin:office seed 3, in the sandbox: failed:" in failed.stdout
    assert "no policy today" in failed.stdout  # the participant's own run: the policy's own words
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not a bundle")
    refused = ember("bundle", "check", broken, "--scenario", "builtin:office", check=False)
    assert refused.returncode == 2 and refused.stdout == "" and "the service would refuse it" in refused.stderr
    missing = ember("bundle", "check", good, check=False)
    assert missing.returncode == 2 and "--scenario" in missing.stderr
