"""Running attack programs with and without the sandbox (tests/isolation).

The sandbox binds with root's rights, so the folders on the way to what it
binds never matter (pytest's ``tmp_path`` under a 0700 folder, a Python
under a 0700 /root); the sandbox's uid reads the bound files by their own
modes (``o+r``, folders ``o+rx``).  ``open_folder`` is a fresh 0755
folder under /tmp, ``private_folder`` one inside a 0700 folder; no test
changes a permission to let the sandbox in.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

from ember.isolation.probe import require_sandbox
from ember.isolation.sandbox import Sandbox, SandboxLimits

ATTACK_TIMEOUT_S = 60.0


@contextlib.contextmanager
def open_folder(prefix="ember-sandbox-test-"):
    """A fresh folder under /tmp that every uid may read (and nobody else may write)."""
    folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def private_folder(prefix="ember-sandbox-private-"):
    """A fresh folder under /tmp only root may enter (0700, as a home): the sandbox needs nothing of the
    folders on the way to what it binds.  Yields a folder inside it (0755), for the test's files."""
    outer = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    inner = os.path.join(outer, "inner")
    os.mkdir(inner, 0o755)
    os.chmod(inner, 0o755)
    try:
        yield inner
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def modes(root):
    """{path: mode} of ``root``, every folder above it and everything below it (links not followed)."""
    found, current = {}, os.path.abspath(root)
    while current != os.path.dirname(current):
        found[current] = os.stat(current).st_mode
        current = os.path.dirname(current)
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = os.path.join(folder, name)
            found[path] = os.lstat(path).st_mode
    return found


def write_file(folder, name, text, mode=0o644):
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(text))
    os.chmod(path, mode)
    return path


class Outcome:
    """What an attack program did: its exit status, its verdict (the JSON of its last stdout line), stderr."""

    def __init__(self, status, stdout, stderr, oom=False):
        self.status = status
        self.stdout = stdout
        self.stderr = stderr.decode("utf-8", "replace")
        self.oom = oom
        lines = stdout.decode("utf-8", "replace").strip().splitlines()
        self.verdict = json.loads(lines[-1]) if lines else None

    def __repr__(self):
        return f"Outcome(status={self.status}, verdict={self.verdict}, stderr={self.stderr[-800:]!r})"


def run_plain(script, folder, args=(), pass_fds=(), timeout=ATTACK_TIMEOUT_S):
    """The attack without the sandbox: as the test's own user (root on CI), in ``folder``."""
    done = subprocess.run(  # noqa: S603 (the test's own program)
        [sys.executable, script, *args],
        cwd=folder,
        capture_output=True,
        timeout=timeout,
        pass_fds=pass_fds,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def sandbox_for(script, folder, limits=None, files=(), env=None):
    require_sandbox(files=[script])  # ``files`` may be unreadable on purpose (an attack on them)
    return Sandbox(files=[script, *files], cwd=folder, env=env, limits=limits or SandboxLimits())


def run_sandboxed(script, folder, args=(), limits=None, files=(), env=None, timeout=ATTACK_TIMEOUT_S):
    """The same attack in the sandbox, its own file bound (and ``files``); the sandbox is ended after."""
    process = sandbox_for(script, folder, limits, files, env).start(
        [sys.executable, script, *args, "--inside"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = process.popen.communicate(timeout=timeout)
        status = process.returncode
    finally:
        process.close()
    return Outcome(status, stdout, stderr, process.oom_killed())
