"""The results writer never writes through a symbolic link (isolation.md §3; results/writer.py).

A real ``ember evaluate --keep-records`` run (a built-in policy with its
kept record, a python policy with its logs) makes every file and folder
the writer makes; each one in turn is then replaced by a link to a copy of
itself outside the directory, and ``evaluate`` again must refuse with one
line naming it, leaving the copy (what the link points to) untouched.  The
writer's own functions refuse a link planted at write time too.
"""

import errno
import os
import shutil

import pytest

from ember import files as safe_files
from ember.errors import ResultsIOError

from helpers.campaigns import assert_one_line_error, ember_cli, write_campaign

CAMPAIGN = """
campaign = "links"
seeds = [0]
scenarios = ["tiny.json"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "py"
python = "campaign_hooks:greedy"
"""

#: Every file and folder the writer makes (relative to RESULTS_DIR), and one it makes on resume.
WRITTEN = [
    "bounds.jsonl",
    "campaign.json",
    "episodes.jsonl",
    "episodes.jsonl.torn",
    "ranking.json",
    "statistics.json",
    "scenarios",
    "scenarios/tiny.json",
    "records",
    "records/greedy",
    "records/greedy/tiny",
    "records/greedy/tiny/0.record.gz",
    "logs",
    "logs/py/tiny",
    "logs/py/tiny/0.stderr",
    "code",
    "code/py.json",
]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    base = tmp_path_factory.mktemp("links")
    path = write_campaign(base / "c", CAMPAIGN, hooks=True)
    results = base / "res"
    done = ember_cli("evaluate", path, "-o", results, "--keep-records", "--workers", "1", timeout=300)
    assert done.returncode == 0, done.stderr
    return path, results


def tree(folder):
    """Every entry under ``folder``, links not followed: (relative path, link target or file bytes or None)."""
    found = {}
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            full = os.path.join(parent, name)
            if os.path.islink(full):
                found[os.path.relpath(full, folder)] = ("link", os.readlink(full))
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    found[os.path.relpath(full, folder)] = ("file", handle.read())
            else:
                found[os.path.relpath(full, folder)] = ("folder", None)
    return found


def test_the_run_made_every_listed_entry(finished):
    _, results = finished
    made = set(tree(results))
    # written on resume, by stats, by 'ember bounds'
    assert set(WRITTEN) - made == {"episodes.jsonl.torn", "statistics.json", "bounds.jsonl"}


@pytest.mark.parametrize("relative", WRITTEN)
def test_a_planted_link_is_refused_never_written_through(finished, tmp_path, relative):
    path, original = finished
    results = tmp_path / "res"
    shutil.copytree(original, results)
    entry = results / relative
    victim = tmp_path / "victim"
    if entry.is_dir():
        shutil.copytree(entry, victim)
        shutil.rmtree(entry)
    elif entry.exists():
        shutil.copy(entry, victim)
        entry.unlink()
    else:
        victim.write_bytes(b"not EMBER's\n")
    os.symlink(victim, entry)
    before, victim_before = tree(results), (tree(victim) if victim.is_dir() else victim.read_bytes())
    done = ember_cli("evaluate", path, "-o", results, "--keep-records", "--workers", "1", timeout=300)
    line = assert_one_line_error(done)
    assert line == f"ember: {entry}: {safe_files.LINKED}"
    assert tree(results) == before
    assert (tree(victim) if victim.is_dir() else victim.read_bytes()) == victim_before


def test_the_writers_functions_refuse_a_link_planted_at_write_time(tmp_path):
    results = tmp_path / "res"
    results.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ranking.json").write_bytes(b"theirs\n")
    os.symlink(outside / "ranking.json", results / "ranking.json")
    os.symlink(outside, results / "logs")
    (results / "tmp").write_bytes(b"done\n")
    (results / "kept").symlink_to(outside / "ranking.json")
    attempts = {
        "write_file": lambda: safe_files.write_file(str(results), "ranking.json", b"ours\n"),
        "make_folder": lambda: safe_files.make_folder(str(results), os.path.join("logs", "p", "s")),
        "replace_into": lambda: safe_files.replace_into(str(results / "tmp"), str(results / "kept")),
        "create_new": lambda: safe_files.create_new(str(results / "ranking.json")),
    }
    for name, attempt in attempts.items():
        with pytest.raises(ResultsIOError) as refused:
            attempt()
        assert refused.value.errno in (errno.ELOOP, errno.EEXIST), name
    assert (outside / "ranking.json").read_bytes() == b"theirs\n"
    assert sorted(os.listdir(outside)) == ["ranking.json"]
