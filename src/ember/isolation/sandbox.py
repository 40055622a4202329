"""The sandbox of a policy process (isolation.md §2): bubblewrap, with memory and pids cgroups.

Run by root, a sandboxed command is started as::

    /bin/sh -c JOIN  <cgroup.procs files> --            # as the caller: limits, then join the cgroups
      bwrap <namespaces, binds, environment>            # as root, no user namespace: root's rights make the binds
        --seccomp FD --cap-drop ALL --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP --
      setpriv --reuid U --regid G --clear-groups        # inside, after the mounts: the sandbox's identity,
        --inh-caps=-all --bounding-set=-all --no-new-privs --   # no capability, no_new_privs
      /usr/bin/env -u PWD COMMAND...                    # bwrap always sets PWD: the environment is exactly ours

Every step ``exec``s the next, so the tree is one process (bubblewrap's
monitor) and bubblewrap's init of the PID namespace, then the command:
all in the episode's cgroups from the first instruction.  bubblewrap reads
every source with root's rights, so no folder on the host needs any
permission for the sandbox's uid (a Python under a 0700 home runs as it
is); what the uid may read is then the files' own modes, ``o+r`` (the
probe checks them).  Each bound path is bound from its resolved path
(``realpath``) at the path it is named by, so no link is followed when the
mount is made.  The folders bubblewrap makes on the way to a bind (0700
otherwise) are ``--perms 0755 --dir`` each, ``/tmp`` and ``/dev/shm`` are
1777.  bubblewrap keeps only the three capabilities ``setpriv`` needs, and
``setpriv`` drops them with the rest as the last step before the command.
Without a user namespace an unprivileged uid could make one of its own
(and be root inside): the seccomp filter of ``seccomp_filter.py`` refuses it.

Run by another user, the sandbox is that user's uid mapped to the sandbox
uid in a new user namespace (``--unshare-all --unshare-user --cap-drop ALL
--disable-userns``), bubblewrap started directly by JOIN.

``--die-with-parent`` ties bubblewrap to the thread that started it
(``PR_SET_PDEATHSIG``): start sandboxes from the episode process's main
thread.
"""

import contextlib
import os
import shutil
import signal
import subprocess

from ..agent import PolicyProcess
from ..errors import SandboxError
from . import cgroups as cgroup_module
from .environment import policy_environment
from .installation import etc_entries, system_entries, this_interpreter
from .seccomp_filter import no_user_namespace_bpf

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
#: Run by root: no user namespace (bubblewrap's mounts are made with root's rights; in a user namespace made by
#: root, bwrap maps the sandbox's uid to host root, which then reads root's 0600 files), each other namespace by
#: name.
_ROOT_NAMESPACES = (
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup",
    "--new-session",
    "--die-with-parent",
    "--clearenv",
)
#: What bubblewrap run by root leaves the command (setpriv): enough to take the identity and empty the
#: bounding set, nothing more.
_ROOT_CAPABILITIES = (
    "--cap-drop",
    "ALL",
    "--cap-add",
    "CAP_SETUID",
    "--cap-add",
    "CAP_SETGID",
    "--cap-add",
    "CAP_SETPCAP",
)
_ENV_PROGRAM = "/usr/bin/env"
#: The identities setresuid/setresgid can take: -1 (4294967295) means "unchanged" to the kernel, and
#: setpriv would leave the command root.
_MAX_ID = (1 << 32) - 2


#: What of this machine every sandbox binds the same way, read once per process (``_machine``): a sandbox
#: is made per episode, and the searches and resolutions were a third of its maker's share of the start.
_MACHINE = {}


def program_path(name):
    found = _MACHINE.get(name) or shutil.which(name) or shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise SandboxError(f"{name} is not installed")
    _MACHINE[name] = found
    return found


def _machine():
    """(the /bin, /lib*, /sbin entries, [(allowlisted /etc path, its resolved path)]) of this machine."""
    if "entries" not in _MACHINE:
        _MACHINE["entries"] = (system_entries(), [(path, os.path.realpath(path)) for path in etc_entries()])
    return _MACHINE["entries"]


def passwd_lines(uid, gid):
    """The generated /etc/passwd and /etc/group: the sandbox's uid and gid, named, home /tmp."""
    passwd = f"ember:x:{uid}:{gid}:EMBER sandbox:/tmp:/usr/sbin/nologin\n".encode()
    group = f"ember:x:{gid}:\n".encode()
    return passwd, group


class SandboxLimits:
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
    installation (default: this interpreter's, ``installation.this_interpreter``).
    """

    def __init__(self, files=(), cwd="/", env=None, limits=None, uid=DEFAULT_UID, gid=None, python=None):
        self.files = [os.path.abspath(path) for path in files]
        self.cwd = os.path.abspath(cwd)
        self.environment = policy_environment(env)
        self.limits = limits or SandboxLimits()
        self.uid = uid
        self.gid = uid if gid is None else gid
        for name, value in (("uid", self.uid), ("gid", self.gid)):
            if type(value) is not int or not 0 < value <= _MAX_ID:
                raise SandboxError(f"the sandbox's {name}: expected an integer from 1 to {_MAX_ID}, got {value!r}")
        self.python = list(this_interpreter() if python is None else python)
        # A path inside a folder bound already (the Python installation, /usr, another policy folder) is
        # visible as it is: binding it again would need a mount point inside a read-only bind.
        chosen = []
        for path in sorted(dict.fromkeys(self.files), key=len):
            if not _covered(path, ["/usr", *self.python, *chosen]):
                chosen.append(path)
        self.files = [path for path in dict.fromkeys(self.files) if path in chosen]

    # -- the command line -------------------------------------------------------------

    def bwrap_arguments(self, passwd_fd, group_fd, seccomp_fd=None):
        """bubblewrap's options, in the order it applies them (``--remount-ro /`` last).

        Run by root: ``seccomp_fd`` is the filter's BPF (``seccomp_filter``), and the capabilities
        setpriv needs come last."""
        root = os.geteuid() == 0
        args = list(_ROOT_NAMESPACES if root else _NAMESPACES)
        if not root:
            args += ["--uid", str(self.uid), "--gid", str(self.gid)]
        args += ["--ro-bind", "/usr", "/usr"]
        system, etc = _machine()
        for path, target in system:
            args += ["--symlink", target, path] if target is not None else ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # Made by root, both are root's: writable by every uid, like the host's own.
        args += ["--perms", "1777", "--size", str(self.limits.tmp_mb * cgroup_module.MIB), "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", str(SHM_MB * cgroup_module.MIB), "--tmpfs", "/dev/shm"]
        folders = _Folders(root)
        for path, resolved in etc:
            args += [*folders.on_the_way(path), "--ro-bind", resolved, path]
            folders.bound(path)
        args += [*folders.on_the_way("/etc/passwd")]
        for fd, path in ((passwd_fd, "/etc/passwd"), (group_fd, "/etc/group")):
            args += ["--perms", "0644", "--ro-bind-data", str(fd), path]  # bubblewrap makes them 0600 otherwise
        args += [*folders.on_the_way(self.cwd), *folders.made(self.cwd), "--dir", self.cwd]
        for path in [*self.python, *self.files]:
            # The resolved source at the named target: mounting never follows a link.
            args += [*folders.on_the_way(path), "--ro-bind", os.path.realpath(path), path]
            folders.bound(path)
        args += ["--chdir", self.cwd]
        for name, value in sorted(self.environment.items()):
            args += ["--setenv", name, value]
        if root:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        if root:
            args += list(_ROOT_CAPABILITIES)
        return args

    def identity(self):
        """setpriv's words (run by root): the sandbox's uid and gid, no group, no capability, no_new_privs."""
        return [
            program_path("setpriv"),
            "--reuid",
            str(self.uid),
            "--regid",
            str(self.gid),
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]

    def argv(self, command, procs_files, passwd_fd, group_fd, seccomp_fd=None):
        """The whole command line that runs ``command`` (a list of words) in this sandbox."""
        argv = ["/bin/sh", "-c", _JOIN, "ember-sandbox", *procs_files, "--"]
        argv += [program_path("bwrap"), *self.bwrap_arguments(passwd_fd, group_fd, seccomp_fd), "--"]
        if os.geteuid() == 0:
            argv += self.identity()
        return [*argv, _ENV_PROGRAM, "-u", "PWD", *command]

    # -- running ------------------------------------------------------------------------

    def start(self, command, stdin=None, stdout=None, stderr=None):
        """Run ``command`` in the sandbox: a ``SandboxedProcess`` (its cgroups made, its limits set)."""
        hierarchy = cgroup_module.Hierarchy.find()
        groups = cgroup_module.EpisodeCgroups(
            hierarchy, self.limits.memory_mb, self.limits.max_processes + BWRAP_PROCESSES
        )
        data = []
        try:
            contents = list(passwd_lines(self.uid, self.gid))
            if os.geteuid() == 0:
                contents.append(no_user_namespace_bpf())
            for content in contents:
                data.append(_data_pipe(content))
            argv = self.argv(command, groups.procs_files, *data)
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


class _Folders:
    """The folders bubblewrap makes on the way to the sandbox's binds.  Run by root it would make each
    mode 0700, root's, and the sandbox's uid could not pass them: each gets ``--perms 0755 --dir``,
    outermost first, once, none inside a bind (it is there already, read-only)."""

    def __init__(self, root):
        self.root = root
        # bubblewrap's own mounts, made before: never made again (a --perms would not be theirs).
        self.done = {"/proc", "/dev", "/tmp", "/dev/shm"}
        self.binds = ["/usr"]

    def made(self, folder):
        self.done.add(folder)
        return ["--perms", "0755"] if self.root else []

    def on_the_way(self, path):
        if not self.root:
            return []
        words, ancestors, current = [], [], os.path.dirname(path)
        while current != "/":
            ancestors.append(current)
            current = os.path.dirname(current)
        for folder in reversed(ancestors):
            if folder not in self.done and not _covered(folder, self.binds):
                self.done.add(folder)
                words += ["--perms", "0755", "--dir", folder]
        return words

    def bound(self, path):
        self.binds.append(path)


def _data_pipe(content):
    """A pipe's read end holding ``content`` (small: it fits the pipe's buffer), for ``--ro-bind-data``."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, content)
    finally:
        os.close(write_fd)
    return read_fd


class SandboxedProcess(PolicyProcess):
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
