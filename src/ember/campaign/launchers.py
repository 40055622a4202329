"""How an agent or python policy's processes start: a ``Launcher`` (``ember.isolation.boundary``) made from
its campaign entry (isolation.md §2): its own files bound, its ``env``, its sandbox limits."""

from ..isolation.boundary import Launcher
from ..isolation.sandbox import DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_MB, DEFAULT_TMP_MB, SandboxLimits
from .code import bound_paths


def policy_limits(entry):
    """The ``SandboxLimits`` of an agent or python policy entry: its keys, else the sandbox's defaults."""
    return SandboxLimits(
        entry.get("memory_mb", DEFAULT_MEMORY_MB),
        entry.get("max_processes", DEFAULT_MAX_PROCESSES),
        entry.get("tmp_mb", DEFAULT_TMP_MB),
    )


def policy_files(entry, folder):
    """An agent or python policy's own files (isolation.md §2): bound in its sandbox, at their own paths."""
    return bound_paths(entry, folder)


def policy_launcher(entry, folder, mode, own_session=False):
    """How the processes of an agent or python policy entry start (``ember.isolation.boundary.Launcher``).

    In an episode they join the episode process's session (``own_session`` False): the watcher ends it
    as a whole; the command's check of a module leads a session of its own, ended with the check.
    """
    return Launcher(
        mode,
        files=policy_files(entry, folder),
        cwd=folder,
        env=entry.get("env"),
        limits=policy_limits(entry),
        own_session=own_session,
    )
