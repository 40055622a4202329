"""Can this machine make a ``required`` sandbox (isolation.md §2, Modes)?  What is missing, in one line.

Checked in order: bubblewrap (and, run by root, ``setpriv`` and libseccomp
for the filter that keeps the policy from making a user namespace), the
memory and pids cgroups (one is made and removed; a non-root operator who
cannot make one is told how to get a delegated cgroup), what the sandbox's
identity may read of what it binds, and the sandbox itself (one is
started, ``/bin/true`` in it).

What it may read: run by root, bubblewrap makes the binds with root's
rights, so the folders on the way never matter; the sandbox's uid then
reads what it is bound by the files' own modes: each bound file needs
``o+r``, each bound folder and each folder inside a bound tree ``o+rx``
(the first that lacks it is named with its ``chmod``; EMBER never changes
a permission itself).  Run by another user, the sandbox is that user's own
uid: the paths are tried as that uid, so the kernel decides.
"""

import os
import shlex
import stat
import subprocess

from ..errors import SandboxError
from . import cgroups
from .installation import python_paths
from .sandbox import DEFAULT_UID, Sandbox, program_path
from .seccomp_filter import no_user_namespace_bpf

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


def world_unreadable(paths):
    """Run by root: the first bound path the sandbox's uid cannot read by its mode, as (path, the mode bits
    it lacks), or None.  A bound file needs ``o+r``; a bound folder, and every folder inside it, ``o+rx``
    (files inside a tree keep their own modes: what the policy may read of them is theirs to decide)."""
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # nothing there: the sandbox refuses it when it binds
        if not stat.S_ISDIR(mode):
            if not mode & stat.S_IROTH:
                return path, "r"
            continue
        folders = [path]
        while folders:
            folder = folders.pop()
            try:
                mode = os.lstat(folder).st_mode
            except OSError:
                continue
            if mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
                return folder, "rx"
            try:
                with os.scandir(folder) as entries:
                    folders += sorted(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
            except OSError:
                continue
    return None


def _unreadable_problem(paths, what, uid):
    if os.geteuid() != 0:
        blocked = unreadable(paths, uid)
        if blocked is not None:
            return f"the sandbox's uid {uid} cannot read {blocked} ({what}: {', '.join(paths)})"
        return None
    found = world_unreadable([os.path.realpath(path) for path in paths])
    if found is None:
        return None
    path, bits = found
    kind = "a file without o+r" if bits == "r" else "a folder without o+rx"
    fix = f"chmod o+{bits} {shlex.quote(path)}"
    return f"the sandbox's uid {uid} cannot read {path} ({what}): {kind}; make it readable: {fix}"


def _cgroup_problem():
    """None when an episode's cgroups can be made (and what killed runs left is swept first); else why."""
    try:
        hierarchy = cgroups.Hierarchy.find()
        cgroups.sweep_left(hierarchy)  # before anything runs: what killed runs left, whoever made it
        cgroups.EpisodeCgroups(hierarchy, 16, 8).close()
    except SandboxError as exc:
        if os.geteuid() == 0:
            return str(exc)
        uid = os.geteuid()
        return (
            f"EMBER cannot create the policy's memory and pids cgroups as uid {uid} ({exc}): the cgroups are "
            "not delegated to this user (cgroup v1 never is); ask the administrator for a delegated cgroup "
            f"(cgroup v2 with memory and pids: systemd-run --user --scope -p Delegate=yes ember ..., or v1 "
            f"memory and pids cgroups owned by uid {uid} that EMBER runs in), or use --sandbox off"
        )
    return None


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
            no_user_namespace_bpf()
        except SandboxError as exc:
            return str(exc)
    problem = _cgroup_problem()
    if problem is not None:
        return problem
    python = python_paths() if python is None else list(python)
    for what, paths in (("the Python installation", python), ("the policy's files", list(files))):
        problem = _unreadable_problem(paths, what, uid)
        if problem is not None:
            return problem
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
        return start_failure(said, status, uid)
    return None


def start_failure(said, status, uid):
    """What failed when a sandbox did not start, from its last standard error lines: setpriv taking the
    sandbox's identity (run by root, the last step inside), or bubblewrap making the namespaces."""
    reason = said[-1] if said else f"exit status {status}"
    if reason.startswith("setpriv:"):
        return f"setpriv cannot take the sandbox's identity (uid {uid}) inside the sandbox: {reason}"
    if os.geteuid() == 0:
        return f"bubblewrap cannot make the sandbox (its namespaces and mounts, run by root): {reason}"
    return f"bubblewrap cannot make the sandbox's namespaces (a user namespace): {reason}"


def require_sandbox(files=(), python=None, uid=DEFAULT_UID):
    """Raise ``SandboxError`` (one line, naming what is missing and ``--sandbox off``) unless a sandbox runs here."""
    problem = sandbox_problem(files, python, uid)
    if problem is not None:
        raise SandboxError(f"the sandbox cannot run here: {problem}; {OFF_HINT}.")
