"""campaign/processes.py: ending an episode's session, whatever the deadline left."""

import subprocess
import sys
import time

from ember.campaign.processes import end_session

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
