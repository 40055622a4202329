"""Checking ``python`` entries: the module is imported by EMBER's host in the sandbox, never in the command.

A module that exits, crashes, prints, starts threads or hangs while it
imports is checked in a policy process of its own; the campaign error
names ``policies[i].python`` and nothing else happens (exit 2, nothing on
stdout, nothing written).
"""

import textwrap

import pytest

from ember.isolation.boundary import Launcher, check_python_source

from helpers.campaign_processes import new_tag, run_env, tagged, write_files
from helpers.campaigns import ember_cli

HEAD = 'campaign = "probe"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n'
GREEDY_POLICY = '[[policies]]\nname = "g"\nbuiltin = "greedy"\n'


def campaign(folder, module_source, name="make"):
    write_files(
        folder,
        {
            "mod.py": textwrap.dedent(module_source),
            "campaign.toml": HEAD + GREEDY_POLICY + f'[[policies]]\nname = "p"\npython = "mod:{name}"\n',
        },
    )
    return folder / "campaign.toml"


CASES = [
    ("exits 0 at import", "import os\nprint('hi')\nos._exit(0)\n", "mod:make", "exited with status 0"),
    ("exits 5 at import", "import sys\nsys.exit(5)\n", "mod:make", "does not import: SystemExit: 5"),
    ("crashes at import", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "mod:make", "killed by SIGSEGV"),
    ("raises at import", "raise RuntimeError('no\\nway')\n", "mod:make", "does not import: RuntimeError: no way"),
    (
        "prints and lacks NAME",
        "import sys\nprint('on stdout')\nprint('on stderr', file=sys.stderr)\n",
        "mod:make",
        "module 'mod' has no attribute 'make'.",
    ),
    ("not callable", "make = 3\n", "mod:make", "mod.make is not callable (a int)."),
    (
        "keyboard interrupt at import",
        "raise KeyboardInterrupt\n",
        "mod:make",
        "does not import: KeyboardInterrupt",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_module_that_misbehaves_while_importing_is_bad_input(tmp_path, case):
    _, source, _, expected = case
    path = campaign(tmp_path / "c", source)
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--sandbox", "required", timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ember: {path}: policies[1].python: "), lines
    assert expected in lines[0]
    assert not (tmp_path / "res").exists()


def test_threads_and_children_started_at_import_do_not_hold_the_check(tmp_path):
    source = """
    import os, threading, time
    threading.Thread(target=time.sleep, args=(3600,)).start()
    if os.fork() == 0:
        time.sleep(3600)
    def make(scenario):
        raise RuntimeError("made")
    """
    path = campaign(tmp_path / "c", source)
    tag = new_tag()  # outside the sandbox (off), every process of the run carries the tag
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", env=run_env(tag), timeout=120)
    # The module imports: the check passes; the episode's own attempt then fails and the run ends.
    assert done.returncode == 0, done.stderr
    assert not tagged(tag)


def test_a_module_that_never_finishes_importing_is_refused_after_the_bound(tmp_path):
    hang = "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass\n"
    write_files(tmp_path, {"hang.py": hang})
    launcher = Launcher("required", files=[str(tmp_path / "hang.py")], cwd=tmp_path)
    assert check_python_source("hang:make", launcher, 0.5) == "module 'hang' did not finish importing within 0.5 s."


def test_the_campaign_folder_comes_first_on_the_module_path(tmp_path):
    write_files(tmp_path, {"colorsys.py": "make = lambda scenario: None\n"})  # the standard library has one
    launcher = Launcher("required", files=[str(tmp_path / "colorsys.py")], cwd=tmp_path)
    assert check_python_source("colorsys:make", launcher, 30) is None
