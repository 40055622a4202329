"""The sandbox of a policy process (isolation.md §2): bubblewrap, with memory and pids cgroups.

A sandboxed command is started as::

    /bin/sh -c JOIN  <cgroup.procs files> --          # as the caller: limits, then join the cgroups
      setpriv --reuid U --regid G --clear-groups --   # run by root: the sandbox's identity, before bwrap
      bwrap <namespaces, binds, environment> --       # its own PID, network, mount, IPC, UTS namespaces
      /usr/bin/env -u PWD COMMAND...                  # bwrap always sets PWD: the environment is exactly ours

Every step ``exec``s the next, so the tree is one process (bubblewrap's
monitor) and bubblewrap's init of the PID namespace, then the command:
all in the episode's cgroups from the first instruction.  Run by root,
bubblewrap keeps every capability inside unless the identity is switched
before it, and ``--uid`` alone maps to host root (notes/sandbox.md), so the
switch is ``setpriv``'s; bwrap then makes a user namespace of that
unprivileged uid.  Run by another user, the sandbox is that user's uid
mapped to the sandbox uid in a new user namespace.

``--die-with-parent`` ties bubblewrap to the thread that started it
(``PR_SET_PDEATHSIG``): start sandboxes from the episode process's main
thread.
"""

import contextlib
import os
import shutil
import signal
import subprocess

from ..errors import SandboxError
from . import cgroups as cgroup_module
from .environment import policy_environment
from .installation import etc_entries, python_paths, system_entries

DEFAULT_UID = 65534
DEFAULT_MEMORY_MB = 2048
MAX_MEMORY_MB = 65536
DEFAULT_MAX_PROCESSES = 64
DEFAULT_TMP_MB = 256
SHM_MB = 64
NOFILE = 256
#: bubblewrap's own processes in the pids cgroup (its monitor and the PID namespace's init):
#: ``max_processes`` counts the policy's processes and threads alone.
BWRAP_PROCESSES = 2
_JOIN = (
    f"ulimit -n {NOFILE} && ulimit -c 0 || exit 125; "
    'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
)
_NAMESPACES = (
    "--unshare-all",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--disable-userns",
    "--new-session",
    "--die-with-parent",
    "--clearenv",
)
_ENV_PROGRAM = "/usr/bin/env"


def program_path(name):
    found = shutil.which(name) or shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise SandboxError(f"{name} is not installed")
    return found


def passwd_lines(uid, gid):
    """The generated /etc/passwd and /etc/group: the sandbox's uid and gid, named, home /tmp."""
    passwd = f"ember:x:{uid}:{gid}:EMBER sandbox:/tmp:/usr/sbin/nologin\n".encode()
    group = f"ember:x:{gid}:\n".encode()
    return passwd, group


class Limits:
    """What one policy tree may use: ``memory_mb`` MiB, ``max_processes`` processes and threads, ``tmp_mb`` MiB
    of /tmp."""

    def __init__(self, memory_mb=DEFAULT_MEMORY_MB, max_processes=DEFAULT_MAX_PROCESSES, tmp_mb=DEFAULT_TMP_MB):
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.tmp_mb = tmp_mb


class Sandbox:
    """What one policy process sees and may use; ``start`` runs a command in it.

    ``files``: the policy's own files and folders (absolute paths), bound
    read-only at their own paths; ``cwd``: its working directory (the
    campaign folder's path, empty but for those binds); ``env``: the
    policy's ``env`` table; ``python``: the folders of the Python
    installation (default: this interpreter's, ``installation.python_paths``).
    """

    def __init__(self, files=(), cwd="/", env=None, limits=None, uid=DEFAULT_UID, gid=None, python=None):
        self.files = [os.path.abspath(path) for path in files]
        self.cwd = os.path.abspath(cwd)
        self.environment = policy_environment(env)
        self.limits = limits or Limits()
        self.uid = uid
        self.gid = uid if gid is None else gid
        self.python = list(python_paths() if python is None else python)
        # A file inside a folder bound already (the Python installation, /usr) is visible as it is:
        # binding it again would need a mount point inside a read-only bind.
        self.files = [path for path in dict.fromkeys(self.files) if not _covered(path, ["/usr", *self.python])]

    # -- the command line -------------------------------------------------------------

    def bwrap_arguments(self, passwd_fd, group_fd):
        """bubblewrap's options, in the order it applies them (``--remount-ro /`` last)."""
        args = list(_NAMESPACES)
        if os.geteuid() != 0:
            args += ["--uid", str(self.uid), "--gid", str(self.gid)]
        args += ["--ro-bind", "/usr", "/usr"]
        for path, target in system_entries():
            args += ["--symlink", target, path] if target is not None else ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--size", str(self.limits.tmp_mb * cgroup_module.MIB), "--tmpfs", "/tmp"]
        args += ["--size", str(SHM_MB * cgroup_module.MIB), "--tmpfs", "/dev/shm"]
        for path in etc_entries():
            args += ["--ro-bind", path, path]
        args += ["--ro-bind-data", str(passwd_fd), "/etc/passwd", "--ro-bind-data", str(group_fd), "/etc/group"]
        args += ["--dir", self.cwd]
        for path in [*self.python, *self.files]:
            args += ["--ro-bind", path, path]
        args += ["--chdir", self.cwd]
        for name, value in sorted(self.environment.items()):
            args += ["--setenv", name, value]
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        return args

    def argv(self, command, procs_files, passwd_fd, group_fd):
        """The whole command line that runs ``command`` (a list of words) in this sandbox."""
        argv = ["/bin/sh", "-c", _JOIN, "ember-sandbox", *procs_files, "--"]
        if os.geteuid() == 0:
            identity = ["--reuid", str(self.uid), "--regid", str(self.gid), "--clear-groups", "--"]
            argv += [program_path("setpriv"), *identity]
        argv += [program_path("bwrap"), *self.bwrap_arguments(passwd_fd, group_fd), "--", _ENV_PROGRAM, "-u", "PWD"]
        return argv + list(command)

    # -- running ------------------------------------------------------------------------

    def start(self, command, stdin=None, stdout=None, stderr=None):
        """Run ``command`` in the sandbox: a ``SandboxedProcess`` (its cgroups made, its limits set)."""
        hierarchy = cgroup_module.Hierarchy.find()
        groups = cgroup_module.EpisodeCgroups(
            hierarchy, self.limits.memory_mb, self.limits.max_processes + BWRAP_PROCESSES
        )
        data = []
        try:
            for content in passwd_lines(self.uid, self.gid):
                data.append(_data_pipe(content))
            argv = self.argv(command, groups.procs_files, data[0], data[1])
            try:
                popen = subprocess.Popen(  # noqa: S603 (our own command line; the policy's words are its arguments)
                    argv,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    pass_fds=tuple(data),
                    close_fds=True,
                    env={},
                    cwd="/",
                    start_new_session=True,
                )
            except OSError as exc:
                raise SandboxError(f"cannot start the sandbox: {exc.strerror or exc}") from None
        except BaseException:
            groups.close()
            raise
        finally:
            for fd in data:
                os.close(fd)
        return SandboxedProcess(popen, groups)


def _covered(path, folders):
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _data_pipe(content):
    """A pipe's read end holding ``content`` (small: it fits the pipe's buffer), for ``--ro-bind-data``."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, content)
    finally:
        os.close(write_fd)
    return read_fd


class SandboxedProcess:
    """A running sandbox: the ``Popen`` of bubblewrap's monitor, and the cgroups holding its whole tree.

    Like a ``Popen`` (``stdin``, ``stdout``, ``pid``, ``poll``, ``wait``,
    ``terminate``, ``kill``, ``returncode``), except that a signal reaches
    every process of the tree and the status of a command killed by a
    signal is ``-signal`` (bubblewrap reports it as 128 + signal).
    ``close`` ends the tree and removes the cgroups; it must be called.
    """

    def __init__(self, popen, groups):
        self.popen = popen
        self.groups = groups
        self.stdin = popen.stdin
        self.stdout = popen.stdout
        self.pid = popen.pid
        self.memory_mb = groups.memory_mb
        self._oom = None

    @property
    def returncode(self):
        return _status(self.popen.returncode)

    def poll(self):
        return _status(self.popen.poll())

    def wait(self, timeout=None):
        return _status(self.popen.wait(timeout))

    def send_signal(self, signum):
        for pid in self.groups.pids():
            if pid != self.popen.pid:  # bubblewrap's monitor would die of it and take the tree along unasked
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.groups.kill()

    def oom_killed(self):
        """True when the kernel killed a process of the tree for exceeding ``memory_mb`` (kept after ``close``)."""
        if self._oom is None and self.groups.folders:
            return self.groups.oom_killed()
        return bool(self._oom)

    def close(self):
        """Kill whatever is left of the tree, reap bubblewrap's monitor and remove the cgroups."""
        if self._oom is None:
            self._oom = self.groups.oom_killed()
        self.groups.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(cgroup_module.KILL_DEADLINE_S)
        self.groups.close()
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


def _status(code):
    if code is not None and 128 < code <= 128 + signal.NSIG:
        return -(code - 128)
    return code
