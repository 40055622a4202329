"""campaign/processes.py: ending an episode's session, whatever the deadline left."""

import os
import subprocess
import sys
import time

from ember.campaign.processes import become_subreaper, end_orphans, end_session, stop_being_subreaper

# A session leader whose child moved to a process group of its own (still in the session), so
# that only the sweep over the process table, not the group kill, can find it.
LEADER = """
import os, sys, time
if os.fork() == 0:
    os.setpgid(0, 0)
    print(os.getpid(), flush=True)  # only once out of the leader's group
    time.sleep(120)
    os._exit(0)
time.sleep(120)
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def test_regression_a_spent_deadline_still_kills_what_the_round_found():
    # Defect: the sweep looked at the clock before killing, so a leader slow to die (a loaded
    # machine: the whole deadline spent waiting for it) left its session's other processes alive.
    leader = subprocess.Popen([sys.executable, "-c", LEADER], start_new_session=True, stdout=subprocess.PIPE)
    child = int(leader.stdout.readline())
    try:
        assert _alive(child)
        end_session(leader.pid, deadline_s=0.0)
        stop = time.monotonic() + 30
        while _alive(child) and time.monotonic() < stop:
            time.sleep(0.05)
        assert not _alive(child), "the session's other process outlived end_session"
    finally:
        leader.kill()
        leader.wait(30)
        if _alive(child):
            subprocess.run(["kill", "-9", str(child)], check=False)


# A child subreaper leading its session: its child calls setsid and forks a daemon, then exits, so
# the daemon is in no session or group of the leader's, and its parent is the leader.
SUBREAPER_LEADER = """
import ctypes, ctypes.util, os, sys, time
ctypes.CDLL(ctypes.util.find_library("c") or None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(write, b"%d\\n" % os.getpid())
        time.sleep(120)
        os._exit(0)
    os._exit(0)
daemon = os.read(read, 64)
time.sleep(0.5)  # the daemon's parent has exited by now: the daemon is this process's child
sys.stdout.write(daemon.decode())
sys.stdout.flush()
time.sleep(120)
"""


def test_regression_the_leader_is_killed_after_its_tree():
    # Defect: the leader was killed first, so the daemons it had adopted went to init (or a
    # subreaper that does not look for them) before the sweep could find them by their parent.
    leader = subprocess.Popen([sys.executable, "-c", SUBREAPER_LEADER], start_new_session=True, stdout=subprocess.PIPE)
    daemon = int(leader.stdout.readline())
    try:
        assert _alive(daemon)
        end_session(leader.pid)
        stop = time.monotonic() + 30
        while _alive(daemon) and time.monotonic() < stop:
            time.sleep(0.05)
        assert not _alive(daemon), "the daemon the leader adopted outlived end_session"
        assert leader.wait(30) == -9
    finally:
        leader.kill()
        leader.wait(30)
        if _alive(daemon):
            subprocess.run(["kill", "-9", str(daemon)], check=False)


def test_end_orphans_ends_children_in_other_sessions_only_and_spares_those_kept():
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    # A real orphan: a child that starts a sleeper in a session of its own and exits, so the sleeper is
    # adopted by this process (a child subreaper), as an episode's leftovers come to a campaign command.
    adopting = become_subreaper()
    # The sleeper holds neither of the leaver's pipes, or capturing its output would wait for the sleeper's end.
    leave = (
        "import subprocess, sys; print(subprocess.Popen(sys.argv[1:], start_new_session=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    )
    leaver = subprocess.run([sys.executable, "-c", leave, *sleeper], capture_output=True, text=True, check=True)
    orphan = int(leaver.stdout)
    kept = subprocess.Popen(sleeper, start_new_session=True)
    same_session = subprocess.Popen(sleeper)  # a worker of ours: the command's session
    try:
        assert os.path.exists(f"/proc/{orphan}")
        end_orphans({kept.pid})
        # Killed and reaped: not even a zombie is left of it.
        assert not os.path.exists(f"/proc/{orphan}")
        assert kept.poll() is None and same_session.poll() is None
    finally:
        for process in (kept, same_session):
            process.kill()
            process.wait(30)
        if adopting:
            stop_being_subreaper()
