"""A policy's bound paths (isolation.md §2 Links) and its code's identity (campaign.md, Changed in 1.1).

``bound_code(entry, folder, where)`` is the one place a campaign's agent or
python entry is looked at on disk before anything runs: every path the
sandbox binds for it (the python module file or top-level package folder;
the agent's ``files``, by default its first argument; its program only when
under the campaign folder) is resolved, with the campaign folder's own path
resolved too.  A path whose resolution leaves the campaign folder, a
symbolic link inside a bound folder that points out of that folder, and an
agent's file argument outside the campaign folder are campaign errors
naming the link.  A bundle of the service is a campaign in the bundle's
folder (``ember-job.toml`` beside its files), so the same check holds there.

It returns the policy's code list: ``[path, sha256-hex]`` of every regular
file under the bound paths, recursively, without ``__pycache__/`` folders,
``path`` relative to the campaign folder and ``/``-separated, sorted by path
in code-point order; ``code_hash`` of it is campaign.json's ``code``.
"""

import hashlib
import os
import stat

from ..agent import split_command
from ..errors import AgentError, CampaignError
from ..isolation.boundary import agent_files, python_files
from ..results.code_lists import code_hash

__all__ = ["bound_code", "bound_paths", "code_hash", "first_difference"]

SKIPPED_FOLDERS = ("__pycache__",)
_BLOCK = 1 << 20


def bound_paths(entry, folder):
    """The paths the sandbox binds for an agent or python entry, as the campaign names them (absolute)."""
    if "python" in entry:
        return python_files(entry["python"], folder)
    if "files" in entry:
        return [os.path.join(folder, path) for path in entry["files"]]
    return agent_files(entry["agent"], folder)


def _inside(path, folder):
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _shown(path, folder):
    """A path as the campaign file would write it: relative to the campaign folder when inside it."""
    absolute = os.path.abspath(path)
    return os.path.relpath(absolute, folder) if _inside(absolute, folder) else absolute


def _file_argument(entry, folder, where):
    """An agent's first argument that names a file outside the campaign folder is refused: the sandbox
    shows the policy its campaign folder's files only, so it could never be read there."""
    if "agent" not in entry:
        return
    try:
        words = split_command(entry["agent"])
    except AgentError:  # the campaign reader has refused such a command already
        return
    if len(words) < 2:
        return
    path = os.path.abspath(os.path.join(folder, words[1]))
    if not _inside(path, folder) and os.path.isfile(path):
        raise CampaignError(
            f"{where}.agent: the agent's file argument {words[1]!r} is outside the campaign folder {folder} "
            "(the sandbox shows a policy its own files under the campaign folder only); "
            "copy it into the campaign folder."
        )


def _resolved_inside(path, real, top, where, folder, what):
    """Refuse ``path`` when its resolution ``real`` is not inside ``top`` (a resolved folder)."""
    if real != top and not _inside(real, top):
        raise CampaignError(
            f"{where}: {_shown(path, folder)} is a symbolic link to {real}, outside {what} "
            "(a policy's files are its own: copy the file in instead of linking it)."
        )


def _file_sha256(path, shown):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CampaignError(f"{shown}: cannot read the policy's file: {exc.strerror or exc}.") from None
    digest = hashlib.sha256()
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CampaignError(f"{shown}: the policy's file changed while it was read.")
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _skipped(parent, top):
    """True inside a ``__pycache__/`` folder: bound, and its links checked, but not the policy's code."""
    return any(part in SKIPPED_FOLDERS for part in os.path.relpath(parent, top).split(os.sep))


def _relative(named, folder):
    return os.path.relpath(named, folder).replace(os.sep, "/")


def bound_code(entry, folder, where):
    """Check the links of an agent or python ``entry`` of the campaign in ``folder``; return its code list.

    ``where`` names the entry (``campaign.toml: policies[1]``).  Raises
    ``CampaignError`` naming the link or the file.
    """
    folder = os.path.abspath(folder)
    top = os.path.realpath(folder)
    _file_argument(entry, folder, where)
    found = {}
    for named in bound_paths(entry, folder):
        real = os.path.realpath(named)
        _resolved_inside(named, real, top, where, folder, f"the campaign folder {top}")
        if not os.path.isdir(real):
            if os.path.isfile(real):
                found[_relative(named, folder)] = _file_sha256(real, _shown(named, folder))
            continue
        # Walked without following links: every link inside is looked at, and must stay inside the folder.
        for parent, folders, files in os.walk(real):
            named_parent = os.path.join(named, os.path.relpath(parent, real))
            for name in [*folders, *files]:
                path = os.path.join(parent, name)
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    target = os.path.realpath(path)
                    shown_path = os.path.normpath(os.path.join(named_parent, name))
                    _resolved_inside(shown_path, target, real, where, folder, f"its folder {_shown(named, folder)}")
                elif stat.S_ISREG(info.st_mode) and name in files and not _skipped(parent, real):
                    key = _relative(os.path.normpath(os.path.join(named_parent, name)), folder)
                    found[key] = _file_sha256(path, key)
    return [[path, found[path]] for path in sorted(found)]


def first_difference(old, new):
    """The first file (in path order) where two code lists differ, said as a phrase; None when equal."""
    before, after = dict(old), dict(new)
    for path in sorted(set(before) | set(after)):
        if path not in after:
            return f"{path} is gone"
        if path not in before:
            return f"{path} is new"
        if before[path] != after[path]:
            return f"{path} has SHA-256 {before[path]} there, {after[path]} now"
    return None
