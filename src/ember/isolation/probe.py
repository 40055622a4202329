"""Can this machine make a ``required`` sandbox (isolation.md §2, Modes)?  What is missing, in one line.

Checked in order: bubblewrap (and ``setpriv`` when run by root), the
memory and pids cgroups (one is made and removed), read access for the
sandbox's uid to every path the sandbox binds (the Python installation,
the policy's files: tried as that uid, so the kernel decides, e.g. a
Python under a 0700 home), and a user namespace (a sandbox is started).
"""

import os
import subprocess

from ..errors import SandboxError
from . import cgroups
from .installation import python_paths
from .sandbox import DEFAULT_UID, Sandbox, program_path

OFF_HINT = "--sandbox off runs the policies with the operator's rights"
#: As the sandbox's uid: print the first path it cannot reach.  ``x:PATH``, a folder on the way, must be
#: searchable; ``r:PATH``, a path to bind, readable (and searchable when it is a folder).
_READABLE = (
    'for a; do p="${a#?:}"; case "$a" in x:*) [ -x "$p" ] || { echo "$p"; exit 0; } ;; '
    '*) if [ -d "$p" ]; then { [ -r "$p" ] && [ -x "$p" ]; } || { echo "$p"; exit 0; }; '
    'elif [ ! -r "$p" ]; then echo "$p"; exit 0; fi ;; esac; done'
)
_PROBE_TIMEOUT_S = 30.0


def _on_the_way(path):
    """Every folder from / down to ``path``, then ``path``."""
    parts, current = [], os.path.abspath(path)
    while True:
        parts.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            return list(reversed(parts))
        current = parent


def unreadable(paths, uid=DEFAULT_UID, gid=None):
    """The first of ``paths`` (or a folder on the way to one) that ``uid`` cannot read, or None."""
    gid = uid if gid is None else gid
    ordered = []
    for path in paths:
        steps = _on_the_way(path)
        for step in [f"x:{folder}" for folder in steps[:-1]] + [f"r:{steps[-1]}"]:
            if step not in ordered:
                ordered.append(step)
    kwargs = {"user": uid, "group": gid, "extra_groups": []} if os.geteuid() == 0 else {}
    try:
        done = subprocess.run(  # noqa: S603 (our own script; the paths are its arguments)
            ["/bin/sh", "-c", _READABLE, "ember-probe", *ordered],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            env={},
            cwd="/",
            **kwargs,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{ordered[0][2:] if ordered else '/'} (the check could not run: {exc})"
    found = done.stdout.decode("utf-8", "replace").strip()
    return found or None


def sandbox_problem(files=(), python=None, uid=DEFAULT_UID):
    """None when a ``required`` sandbox can run a policy with ``files`` here; else what is missing."""
    try:
        program_path("bwrap")
    except SandboxError:
        return "bubblewrap (bwrap, Debian package bubblewrap) is not installed"
    if os.geteuid() == 0:
        try:
            program_path("setpriv")
        except SandboxError:
            return "setpriv (util-linux) is not installed: run by root, the sandbox needs it to drop root"
    try:
        hierarchy = cgroups.Hierarchy.find()
        cgroups.sweep_left(hierarchy)  # before anything runs: what killed runs left, whoever made it
        cgroups.EpisodeCgroups(hierarchy, 16, 8).close()
    except SandboxError as exc:
        return str(exc)
    python = python_paths() if python is None else list(python)
    for what, paths in (("the Python installation", python), ("the policy's files", list(files))):
        blocked = unreadable(paths, uid)
        if blocked is not None:
            return f"the sandbox's uid {uid} cannot read {blocked} ({what}: {', '.join(paths)})"
    return _namespaces_problem(python, uid)


def _namespaces_problem(python, uid):
    try:
        process = Sandbox(python=python, uid=uid).start(
            ["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    except SandboxError as exc:
        return str(exc)
    try:
        try:
            status = process.wait(_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "bubblewrap did not start a sandbox within 30 s"
        said = process.popen.stderr.read().decode("utf-8", "replace").strip().splitlines()
    finally:
        process.close()
    if status != 0:
        reason = said[-1] if said else f"exit status {status}"
        return f"bubblewrap cannot make the sandbox's namespaces (a user namespace): {reason}"
    return None


def require_sandbox(files=(), python=None, uid=DEFAULT_UID):
    """Raise ``SandboxError`` (one line, naming what is missing and ``--sandbox off``) unless a sandbox runs here."""
    problem = sandbox_problem(files, python, uid)
    if problem is not None:
        raise SandboxError(f"the sandbox cannot run here: {problem}; {OFF_HINT}.")
