"""Agent bundles (service.md §6): every member checked before anything is written, real hostile archives.

``check_bundle`` is called on real .tar.gz files; it must refuse each
hostile one with a 422 naming the member, writing nothing, and a tar bomb
at the header that crosses the limit (the 4 GiB one is never unpacked:
the test's file is a few MiB, see helpers/bundles.py).
"""

import os

import pytest

from ember.service.config import ServiceLimits
from ember.service.errors import ServiceRefusal
from ember.service.hidden.bundles import check_bundle, extract_bundle

from helpers.bundles import (
    agent_bundle,
    bomb_bundle,
    hostile_member,
    make_bundle,
    many_members_bundle,
    python_bundle,
)

MANIFEST = 'name = "walker"\npython = "walker:make_policy"\n'
HOSTILE = ["dotdot", "absolute", "symlink", "hardlink", "device", "fifo", "sparse", "duplicate"]


def refusal(path, limits=None):
    with pytest.raises(ServiceRefusal) as caught:
        check_bundle(str(path), "alpha", limits or ServiceLimits())
    return caught.value


def test_honest_bundles_are_accepted_and_unpacked_readable(tmp_path):
    manifest, names = check_bundle(python_bundle(str(tmp_path / "p.tar.gz")), "alpha", ServiceLimits())
    assert (manifest.name, manifest.python, manifest.agent) == ("walker", "walker:make_policy", None)
    assert names == ["ember-agent.toml", "walker.py"]
    manifest, _ = check_bundle(agent_bundle(str(tmp_path / "a.tar.gz")), "alpha", ServiceLimits())
    assert (manifest.name, manifest.agent) == ("runner", ["python3", "agent.py"])
    extract_bundle(str(tmp_path / "a.tar.gz"), str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path / "out")) == ["agent.py", "ember-agent.toml"]
    assert os.stat(tmp_path / "out" / "agent.py").st_mode & 0o777 == 0o644
    assert os.stat(tmp_path / "out").st_mode & 0o777 == 0o755


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_member_is_refused_before_anything_is_written(tmp_path, kind):
    folder = tmp_path / "work"
    folder.mkdir()
    path = make_bundle(str(folder / "b.tar.gz"), {"ember-agent.toml": MANIFEST, "walker.py": "x = 1\n"},
                       [hostile_member(kind)])  # fmt: skip
    exc = refusal(path)
    assert exc.status == 422
    assert str(exc).startswith("the bundle: ")
    assert os.listdir(folder) == ["b.tar.gz"]
    assert not os.path.exists(tmp_path / "x")


def test_ten_to_the_fifth_members_are_refused_at_the_limit(tmp_path):
    exc = refusal(many_members_bundle(str(tmp_path / "many.tar.gz"), 100_000))
    assert (exc.status, str(exc)) == (422, "the bundle: more than 10,000 members")


def test_a_four_gib_member_is_refused_at_its_header(tmp_path):
    path = tmp_path / "bomb.tar.gz"
    size = bomb_bundle(str(path), 4096)
    assert size < 64 << 20  # it is sent whole: under the as-sent limit, 4 GiB unpacked
    exc = refusal(path)
    assert (exc.status, str(exc)) == (422, "the bundle: more than 536,870,912 bytes unpacked")


def test_many_members_under_the_member_limit_are_refused_when_their_sum_crosses_it(tmp_path):
    path = tmp_path / "bomb.tar.gz"
    bomb_bundle(str(path), 8, members=8)
    limits = ServiceLimits(max_bundle_unpacked_bytes=60 << 20)
    assert str(refusal(path, limits)) == f"the bundle: more than {60 << 20:,} bytes unpacked"


def test_over_the_sent_limit_is_413(tmp_path):
    path = python_bundle(str(tmp_path / "p.tar.gz"))
    exc = refusal(path, ServiceLimits(max_bundle_bytes=100))
    assert exc.status == 413


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ('python = "walker:make_policy"\n', "name: expected a name"),
        ('name = "w"\n', "expected exactly one of 'agent'"),
        ('name = "w"\nagent = []\npython = "walker:x"\n', "expected exactly one of 'agent'"),
        ('name = "w"\nagent = []\n', "agent: expected a non-empty list"),
        ('name = "w"\npython = "walker"\n', 'python: expected "module:attr"'),
        ('name = "w"\npython = "walker:make:policy"\n', 'python: expected "module:attr"'),
        ('name = "w"\npython = ":make_policy"\n', 'python: expected "module:attr"'),
        ('name = "w"\npython = "nomodule:make"\n', "python: no module nomodule"),
        ('name = "w"\npython = "walker:make_policy"\nstep_timeout = 11\n', "step_timeout: at most 10"),
        ('name = "w"\npython = "walker:make_policy"\nmemory_mb = 4096\n', "memory_mb: at most 2048"),
        ('name = "w"\npython = "walker:make_policy"\nepisode_timeout = 3601\n', "episode_timeout: at most 3600"),
        ('name = "w"\npython = "walker:make_policy"\nmemory_mb = 1.5\n', "memory_mb: expected an integer"),
        ('name = "w"\npython = "walker:make_policy"\nextra = 1\n', "extra: unknown key"),
        ('name = "w" = 1\n', "not valid TOML"),
    ],
)
def test_a_bad_manifest_is_422_naming_the_key(tmp_path, manifest, message):
    exc = refusal(make_bundle(str(tmp_path / "b.tar.gz"), {"ember-agent.toml": manifest, "walker.py": "x = 1\n"}))
    assert exc.status == 422
    assert message in str(exc)


def test_no_manifest_and_not_a_gzip_are_refused(tmp_path):
    assert "no ember-agent.toml" in str(refusal(make_bundle(str(tmp_path / "b.tar.gz"), {"walker.py": "x\n"})))
    (tmp_path / "plain.tar").write_bytes(b"not gzip at all")
    assert "expected a .tar.gz" in str(refusal(tmp_path / "plain.tar"))
