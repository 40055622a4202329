"""``ember scenarios`` (the list) and ``ember scenarios show NAME`` (one scenario's canonical JSON and hash)."""

import hashlib
import subprocess
import sys
from importlib import resources

import pytest

import ember
from ember.canonical import canonical_json
from ember.scenario import builtin_names


def ember_cli(*args):
    return subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, timeout=120)


@pytest.mark.parametrize("name", ["office", "builtin:small-room", "ember-v1/small-hall-block"])
def test_show_writes_the_canonical_json_and_its_hash(name):
    done = ember_cli("scenarios", "show", name)
    assert done.returncode == 0, done.stderr
    source = name if name.startswith("builtin:") else f"builtin:{name}"
    assert done.stdout == canonical_json(ember.load_scenario(source)) + b"\n"
    digest = hashlib.sha256(done.stdout[:-1]).hexdigest()
    assert f"sha256:{digest}" == ember.scenario_hash(source)
    assert done.stderr.decode() == f"ember: {source}: sha256:{digest}\n"


def test_show_of_a_shipped_file_is_that_file_byte_for_byte():
    shipped = (resources.files("ember") / "scenarios" / "ember-v1" / "small-office-block.json").read_bytes()
    assert ember_cli("scenarios", "show", "ember-v1/small-office-block").stdout == shipped


def test_the_list_is_unchanged_one_line_per_builtin():
    done = ember_cli("scenarios")
    assert (done.returncode, done.stderr) == (0, b"")
    assert [line.split()[0] for line in done.stdout.decode().splitlines()] == [f"builtin:{n}" for n in builtin_names()]


def test_show_without_a_name_is_a_usage_error():
    done = ember_cli("scenarios", "show")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().count("\n") == 1 and "NAME" in done.stderr.decode()
