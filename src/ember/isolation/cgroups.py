"""The memory and pids cgroups of one sandboxed policy (isolation.md §2, Memory and Process count).

Each episode gets its own cgroups, made as children of the cgroups the
episode process is in (so whatever limits the machine already puts on
EMBER still hold) and removed after it.  cgroup v2 is used where its
hierarchy offers both controllers; otherwise the v1 ``memory`` and
``pids`` hierarchies (``memory.limit_in_bytes``, with swap also
``memory.memsw.limit_in_bytes``; ``pids.max``).  The policy's processes
join them before bubblewrap starts (``sandbox.py``), so every process of
the tree is counted and found here: ending an episode kills every process
its cgroups list until none is left.
"""

import contextlib
import errno
import itertools
import os
import re
import secrets
import signal
import time

from ..errors import SandboxError

MIB = 1 << 20
#: How long ending a policy's processes may keep killing (a fork bomb bounded by pids.max).
KILL_DEADLINE_S = 5.0
#: How long removing an emptied cgroup may be retried while the kernel still reports it busy.
REMOVE_DEADLINE_S = 2.0
_MOUNTINFO = "/proc/self/mountinfo"
_OWN = "/proc/self/cgroup"
_names = itertools.count(1)
#: ``ember-PID-N-TOKEN``: PID the process that made it, N its count there, TOKEN random.  A PID is
#: reused and a counter inherited across a fork, so PID and N alone named a cgroup left by a killed
#: process again, and the next episode given that PID could not start ("File exists").
_NAME = re.compile(r"ember-(\d+)-\d+(?:-[0-9a-f]+)?")  # without TOKEN: made by older code


def _read(path):
    with open(path, encoding="ascii") as handle:
        return handle.read()


def _write(path, text):
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def _mounts():
    """(mount point, root inside the hierarchy, file system type, super options) of every cgroup file system."""
    found = []
    with contextlib.suppress(OSError):
        for line in _read(_MOUNTINFO).splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                point = fields[4].replace("\\040", " ")
                found.append((point, fields[3], tail[0], set(tail[2].split(","))))
    return found


def _below(point, root, path):
    """The folder of cgroup ``path`` under a mount of the hierarchy's ``root`` at ``point``."""
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return os.path.join(point, path.lstrip("/"))


def _own_paths():
    """{controller or "" (v2): this process's cgroup path} from /proc/self/cgroup."""
    own = {}
    with contextlib.suppress(OSError):
        for line in _read(_OWN).splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    return own


def _swap_exists():
    with contextlib.suppress(OSError, ValueError):
        for line in _read("/proc/meminfo").splitlines():
            if line.startswith("SwapTotal:"):
                return int(line.split()[1]) > 0
    return False


class Hierarchy:
    """Where the episode cgroups are made: one v2 folder, or the v1 memory and pids folders."""

    def __init__(self, version, memory, pids):
        self.version = version
        self.memory = memory  # the parent folder of the memory cgroups (the v2 folder for both on v2)
        self.pids = pids

    @classmethod
    def find(cls):
        """The hierarchy of this machine; ``SandboxError`` naming the controller that is missing."""
        mounts, own = _mounts(), _own_paths()
        for point, root, kind, _ in mounts:
            if kind == "cgroup2" and "" in own:
                parent = _below(point, root, own[""])
                with contextlib.suppress(OSError):
                    if {"memory", "pids"} <= set(_read(os.path.join(parent, "cgroup.controllers")).split()):
                        return cls(2, parent, parent)
        folders = {}
        for point, root, kind, options in mounts:
            if kind == "cgroup":
                for controller in ("memory", "pids"):
                    if controller in options and controller in own:
                        folders[controller] = _below(point, root, own[controller])
        for controller in ("memory", "pids"):
            if controller not in folders:
                raise SandboxError(f"no {controller} cgroup controller is mounted (cgroup v2 or v1 {controller})")
        return cls(1, folders["memory"], folders["pids"])


def remove_left_by(pid, hierarchy=None):
    """End and remove the episode cgroups a process ``pid`` made and could not remove (it was killed):
    the watcher of an episode process calls this once that process is gone."""
    hierarchy = hierarchy or Hierarchy.find()
    prefix = f"ember-{pid}-"
    left = []
    for parent in dict.fromkeys((hierarchy.memory, hierarchy.pids)):
        with contextlib.suppress(OSError):
            left += [os.path.join(parent, name) for name in os.listdir(parent) if name.startswith(prefix)]
    if left:
        orphan = EpisodeCgroups.__new__(EpisodeCgroups)
        orphan.hierarchy, orphan.memory_mb, orphan.folders = hierarchy, 0, left
        orphan.close()
    return left


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_left(hierarchy=None):
    """End and remove the episode cgroups whose maker is gone (a process killed before it could, and
    nobody to do it for it: its watcher killed too); returns their folders.  Whatever is still in one
    is a policy's process that outlived its episode."""
    hierarchy = hierarchy or Hierarchy.find()
    left = []
    for parent in dict.fromkeys((hierarchy.memory, hierarchy.pids)):
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                found = _NAME.fullmatch(name)
                if found is not None and not _alive(int(found.group(1))):
                    left.append(os.path.join(parent, name))
    if left:
        orphan = EpisodeCgroups.__new__(EpisodeCgroups)
        orphan.hierarchy, orphan.memory_mb, orphan.folders = hierarchy, 0, left
        orphan.close()
    return left


class EpisodeCgroups:
    """The cgroups of one sandboxed policy: made with its limits, emptied and removed by ``close``."""

    def __init__(self, hierarchy, memory_mb, max_processes):
        self.hierarchy = hierarchy
        self.memory_mb = memory_mb
        name = f"ember-{os.getpid()}-{next(_names)}-{secrets.token_hex(4)}"
        if hierarchy.version == 2:
            self.folders = [os.path.join(hierarchy.memory, name)]
        else:
            self.folders = [os.path.join(hierarchy.memory, name), os.path.join(hierarchy.pids, name)]
        made = []
        try:
            if hierarchy.version == 2:
                self._enable_v2()
            for folder in self.folders:
                os.mkdir(folder, 0o755)
                made.append(folder)
            limit = str(memory_mb * MIB)
            if hierarchy.version == 2:
                _write(os.path.join(self.folders[0], "memory.max"), limit)
                with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to bound
                    _write(os.path.join(self.folders[0], "memory.swap.max"), "0")
                _write(os.path.join(self.folders[0], "pids.max"), str(max_processes))
            else:
                _write(os.path.join(self.folders[0], "memory.limit_in_bytes"), limit)
                memsw = os.path.join(self.folders[0], "memory.memsw.limit_in_bytes")
                if _swap_exists() and os.path.exists(memsw):
                    _write(memsw, limit)  # memory and swap together: the limit cannot move to swap
                _write(os.path.join(self.folders[1], "pids.max"), str(max_processes))
        except OSError as exc:
            self.folders = made
            self.close()
            where = exc.filename or self.folders
            raise SandboxError(f"cannot make the policy's cgroup in {where}: {exc.strerror}") from None

    def _enable_v2(self):
        controllers = os.path.join(self.hierarchy.memory, "cgroup.subtree_control")
        if not {"memory", "pids"} <= set(_read(controllers).split()):
            _write(controllers, "+memory +pids")

    @property
    def procs_files(self):
        """The ``cgroup.procs`` file of each cgroup: a process writes its pid there to join."""
        return [os.path.join(folder, "cgroup.procs") for folder in self.folders]

    def pids(self):
        """Every process in the cgroups now."""
        found = set()
        for path in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in _read(path).split())
        return found

    def oom_killed(self):
        """True when the kernel killed a process of the tree for exceeding the memory limit."""
        name = "memory.events" if self.hierarchy.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in _read(os.path.join(self.folders[0], name)).splitlines():
                key, value = line.split()
                if key == "oom_kill":
                    return int(value) > 0
        return False

    def kill(self, deadline_s=KILL_DEADLINE_S):
        """SIGKILL every process of the cgroups, round after round, until none is left (bounded)."""
        stop = time.monotonic() + deadline_s
        while True:
            alive = self.pids()
            if not alive:
                return True
            for pid in alive:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > stop:
                return False
            time.sleep(0.001)

    def close(self):
        """Kill what is left and remove the cgroups, retrying while the kernel still reports them busy."""
        if self.folders:
            self.kill()
        stop = time.monotonic() + REMOVE_DEADLINE_S
        for folder in self.folders:
            pause = 0.0005
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > stop:
                        break
                    self.kill(deadline_s=0)
                    time.sleep(pause)
                    pause = min(pause * 2, 0.05)
        self.folders = []
