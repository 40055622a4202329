"""Nothing a hidden job starts is left behind under ``serve``, not even a zombie: the episode processes a
local worker killed and handed on when it ended are reaped by the ``serve`` parent that adopted them."""

import os
import time

from helpers.bundles import agent_bundle, python_bundle
from helpers.hidden import HiddenService


def children(pid):
    """(pid, state letter, command) of each child of ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append((int(name), fields[0], stat[stat.index("(") + 1 : stat.rindex(")")]))
    return found


def test_a_finished_job_leaves_no_process_and_no_zombie_under_serve(tmp_path):
    hidden = HiddenService(hidden_seeds=2, teams=("alpha",))
    try:
        server = hidden.serve()
        time.sleep(1)
        before = {pid for pid, _, _ in children(server.process.pid)}
        for bundle in (python_bundle(tmp_path / "python.tar.gz"), agent_bundle(tmp_path / "agent.tar.gz")):
            job = hidden.submit("alpha", bundle)
            assert hidden.wait_job("alpha", job)["state"] == "done"
            left = []
            for _ in range(50):  # the evaluator retires its pool just after the job's rows are committed
                left = [c for c in children(server.process.pid) if c[0] not in before]
                if not left:
                    break
                time.sleep(0.1)
            assert left == [], left
    finally:
        hidden.close()
