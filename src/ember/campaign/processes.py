"""Process control for campaigns: who dies with whom, and ending every process an episode started.

Foreign code (an agent, a python policy) runs in an *episode process*: the
leader of its own session, so its process group and session id are its
pid, and a child subreaper, so every orphan of its tree is reparented to
it; it never exits by itself, but waits to be ended.  Ending an episode
stops its leader, ends the whole tree under it (also the processes that
left its session) and then the leader, and, in a local worker (a child
subreaper too), every orphan that was reparented to the worker.  The kernel's parent-death signal
(``PR_SET_PDEATHSIG``) makes each process die, or clean up and exit, when
the process that started it dies, however it dies (SIGKILL included).

Linux gives all of this (``prctl`` through ctypes, ``/proc``).  Elsewhere
the parent-death signal and the subreaper are unavailable (callers fall
back on polling their parent) and a session is ended through its process
group alone.
"""

import contextlib
import ctypes
import ctypes.util
import os
import select
import signal
import time

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
#: How long ending a session may keep trying (a process forking as fast as it is killed).
END_SESSION_S = 5.0
_ROUND_PAUSE_S = 0.01

_prctl = None


def _libc_prctl():
    global _prctl
    if _prctl is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _prctl = libc.prctl
        except (OSError, AttributeError):
            _prctl = False
    return _prctl


def set_parent_death_signal(signum):
    """Ask the kernel to send ``signum`` to this process when its parent (thread) dies; False if unsupported."""
    prctl = _libc_prctl()
    return bool(prctl) and prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0


def set_not_dumpable():
    """Make this process's /proc files (its open descriptors among them) root's alone; False if unsupported."""
    prctl = _libc_prctl()
    return bool(prctl) and prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def become_subreaper():
    """Make this process adopt its orphaned descendants (Linux); False if unsupported."""
    prctl = _libc_prctl()
    return bool(prctl) and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def stop_being_subreaper():
    prctl = _libc_prctl()
    return bool(prctl) and prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) == 0


def is_subreaper():
    """True when this process already adopts its orphaned descendants."""
    prctl = _libc_prctl()
    if not prctl:
        return False
    flag = ctypes.c_int(0)
    return prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0


def children():
    """The pids of this process's live children."""
    me = os.getpid()
    return {info.pid for info in process_table() if info.ppid == me and info.state not in ("Z", "X")}


class ProcessInfo:
    """One line of the process table: pid, parent, process group, session and state letter."""

    __slots__ = ("pid", "ppid", "pgrp", "session", "state")

    def __init__(self, pid, ppid, pgrp, session, state):
        self.pid, self.ppid, self.pgrp, self.session, self.state = pid, ppid, pgrp, session, state


def read_process(pid):
    """The ``ProcessInfo`` of ``pid`` from /proc, or None when it is gone (or /proc is missing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: the fields follow the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return ProcessInfo(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode())
    except (IndexError, ValueError):
        return None


def process_table():
    """Every process visible in /proc (empty where there is no /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    table = []
    for name in names:
        if name.isdigit():
            info = read_process(int(name))
            if info is not None:
                table.append(info)
    return table


def has_proc():
    return os.path.isdir("/proc/self")


def ended(pid):
    """True once ``pid`` has exited: gone, or a zombie its parent has not reaped yet."""
    if has_proc():
        info = read_process(pid)
        return info is None or info.state in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def child_alive(pid):
    """True while ``pid`` runs as a child of this process (a reused pid, someone else's, is not ours)."""
    info = read_process(pid)
    if info is None:
        return has_proc() is False and not ended(pid)
    return info.ppid == os.getpid() and info.state not in ("Z", "X")


def _kill(pid, signum=signal.SIGKILL):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def kill_group(pgid, signum=signal.SIGKILL):
    """Signal a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _reap(pid):
    """Collect ``pid`` if it is an exited child of ours; never waits."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _await_exit(pid, timeout):
    """Wait (at most ``timeout``) until ``pid`` has exited, without reaping it."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def end_session(leader, adopted=False, deadline_s=END_SESSION_S):
    """SIGKILL every process of the session (and group) that ``leader`` leads, and every descendant of it.

    The leader and its group are stopped first (SIGSTOP) and the leader is
    killed last: a stopped process forks nothing more, and a leader that is
    a child subreaper (an episode process is one) holds every orphan of its
    tree, whatever session the orphan chose, for as long as it lives, so
    its whole tree is found through the parent links of the process table.
    With ``adopted`` (this process is a child subreaper too) every
    descendant of this process is ended as well: orphans of a leader that
    died first were reparented here; the exited ones are reaped, except
    ``leader`` itself, which its starter collects.  Each sweep repeats until
    a round finds nothing alive, for at most ``deadline_s`` in all; every
    round kills what it found, the last one included.
    """
    me = os.getpid()
    stop = time.monotonic() + deadline_s
    kill_group(leader, signal.SIGSTOP)
    _kill(leader, signal.SIGSTOP)
    _sweep(leader, me, adopted, stop, spare_leader=True)
    kill_group(leader)
    _kill(leader)
    _await_exit(leader, max(stop - time.monotonic(), 0))  # a round while it is still dying would only have to wait
    _sweep(leader, me, adopted, stop, spare_leader=False)


def _sweep(leader, me, adopted, stop, spare_leader):
    """End the leader's session, group and descendants (and this process's with ``adopted``), but the
    leader itself when ``spare_leader``; exited children of this process are reaped as they are met
    (with ``adopted``), except ``leader``, which its starter collects."""
    roots = (leader, me) if adopted else (leader,)

    def find(table):
        below = _descendants(table, roots)
        alive = set()
        for info in table:
            if info.pid in (me, 1) or (spare_leader and info.pid == leader):
                continue
            if info.state in ("Z", "X"):
                if adopted and info.ppid == me and info.pid != leader:
                    _reap(info.pid)
                continue
            if info.pid == leader or info.pid in below or leader in (info.session, info.pgrp):
                alive.add(info.pid)
        return alive

    _kill_until_none(find, stop)


def _descendants(table, roots):
    """The set of live processes below ``roots`` in ``table``, through the parent links."""
    below = {}
    for info in table:
        if info.state not in ("Z", "X"):
            below.setdefault(info.ppid, []).append(info.pid)
    found, stack = set(), list(roots)
    while stack:
        for pid in below.get(stack.pop(), ()):
            if pid not in found:
                found.add(pid)
                stack.append(pid)
    return found


def _kill_until_none(find, stop):
    """SIGKILL what ``find(process table)`` returns, round after round, until a round finds nothing or
    the clock passes ``stop``.  Every round kills what it found before looking at the clock, the last
    one included: a leader slow to die (a loaded machine) may have used the whole deadline, and what
    was found must not outlive it."""
    while True:
        alive = find(process_table())
        if not alive:
            return
        for pid in alive:
            _kill(pid)
        if time.monotonic() > stop:
            return
        time.sleep(_ROUND_PAUSE_S)


def end_descendants(deadline_s=END_SESSION_S):
    """SIGKILL every descendant of this process (a worker's last act: what its episodes left, adopted
    here as their child subreaper, never outlives it); repeats until none is alive, at most ``deadline_s``."""
    me = os.getpid()
    _kill_until_none(lambda table: _descendants(table, (me,)), time.monotonic() + deadline_s)


def end_orphans(keep, deadline_s=END_SESSION_S):
    """SIGKILL what this process (a child subreaper) adopted: each live child outside ``keep`` and outside
    this process's session, with all its descendants; repeats until none is alive, at most ``deadline_s``.

    Every process EMBER starts in a session of its own is an episode's (an episode process leads
    one), so a child in another session that is not in ``keep`` came here as an orphan of an
    episode whose worker died.  Once they are dead, those adopted orphans (and only they) are reaped: a
    worker that ends hands this process the episode processes it killed and had not collected, and
    nobody else would ever wait for them.  This process's own children (in its session, or in ``keep``)
    are never reaped here: their owners collect them (a reaped worker would leave its pool waiting).
    """
    me, session = os.getpid(), os.getsid(0)

    def adopted(table, dead):
        return {
            info.pid
            for info in table
            if info.ppid == me and info.pid not in keep and info.session != session
            and (info.state == "Z" if dead else info.state not in ("Z", "X"))
        }  # fmt: skip

    def find(table):
        alive = adopted(table, dead=False)
        return alive | _descendants(table, alive)

    _kill_until_none(find, time.monotonic() + deadline_s)
    for pid in adopted(process_table(), dead=True):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
