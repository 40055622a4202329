"""The answer bound (isolation.md §2, Answer size): 4,096 + 128 bytes per active person, its newline not counted.

Real agents (sandboxed) through ``ember run --agent`` and a real campaign:
a line at the bound is an answer, one byte more fails the episode, and a
32 MiB line is never read whole (the reading process's peak memory stays
small).
"""

import io
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from ember.agent import answer_bound, read_line

from helpers.hostile import SEEDS, agent_attacker, evaluate, honest_rows, python_attacker, write_hostile_campaign
from helpers.sandboxes import open_folder, write_file

#: Answers every observation with "stay" for each active person, padded with JSON whitespace to the bound
#: plus EXTRA bytes (its first argument); says the bound of step 0 on its standard error.
PADDED_AGENT = """
import json, sys
extra, first = int(sys.argv[1]), True
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "observation":
        observation = message["observation"]
        bound = 4096 + 128 * len(observation["people"])
        if first:
            print(f"step {observation['step']} bound {bound}", file=sys.stderr, flush=True)
            first = False
        body = json.dumps({p["person_id"]: "stay" for p in observation["people"]})
        line = body[:-1] + " " * (bound + extra - len(body)) + "}"
        assert len(line.encode()) == bound + extra
        sys.stdout.write(line + "\\n")
        sys.stdout.flush()
    elif message["type"] == "end":
        break
"""
#: Writes one line of 32 MiB, 64 KiB at a time (its own memory stays small), then its newline.
HUGE_AGENT = """
import sys
chunk = b" " * 65536
for line in sys.stdin.buffer:
    if b'"observation"' in line:
        out = sys.stdout.buffer
        out.write(b'{"0": "stay"')
        for _ in range(512):
            out.write(chunk)
        out.write(b"}\\n")
        out.flush()
        break
"""
MEASURED_RUN = """
import resource, sys
from ember.cli import main
status = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(status)
"""


def ember_run(folder, agent, *args, measured=False):
    command = ["-m", "ember.cli"] if not measured else ["-c", MEASURED_RUN]
    return subprocess.run(
        [sys.executable, *command, "run", "builtin:small-room", "--agent", shlex.join([sys.executable, agent, *args])],
        capture_output=True,
        cwd=folder,
        timeout=300,
        check=False,
    )


def test_a_line_exactly_at_the_bound_is_an_answer_and_one_byte_more_fails_the_episode():
    with open_folder() as folder:
        agent = write_file(folder, "padded.py", PADDED_AGENT)
        exact = ember_run(folder, agent, "0")
        assert exact.returncode == 0, exact.stderr
        over = ember_run(folder, agent, "1")
    step, bound = map(int, re.search(rb"step (\d+) bound (\d+)", over.stderr).groups())
    assert bound > answer_bound(0)  # the bound grows with the active people
    assert over.returncode == 2
    assert over.stderr.decode().splitlines()[-1] == f"ember: step {step}: the answer is longer than {bound:,} bytes."


def test_a_32_mib_answer_line_fails_the_episode_and_is_never_held_in_memory():
    with open_folder() as folder:
        agent = write_file(folder, "huge.py", HUGE_AGENT)
        # The same run with an agent that answers at the bound, first: what the reading process costs anyway.
        padded = write_file(folder, "padded.py", PADDED_AGENT)
        honest = ember_run(folder, padded, "0", measured=True)
        done = ember_run(folder, agent, measured=True)
    assert honest.returncode == 0, honest.stderr
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2
    assert re.fullmatch(r"ember: step \d+: the answer is longer than [\d,]+ bytes\.", lines[-2]), lines
    peak_kib, honest_kib = int(lines[-1]), int(honest.stderr.decode().splitlines()[-1])
    # Never the line: less than a quarter of its 32 MiB above the honest run's peak.
    assert peak_kib < honest_kib + 8 * 1024, f"the reading process's peak: {peak_kib} KiB, honest {honest_kib} KiB"


@pytest.mark.parametrize(
    "attacker",
    [
        agent_attacker(
            "import sys\n"
            "sys.stdin.buffer.readline()\n"
            "sys.stdin.buffer.readline()\n"
            "sys.stdout.write('{' + ' ' * (32 << 20) + '}\\n')\n"
            "sys.stdout.flush()\n"
        ),
        python_attacker(
            "def make(scenario):\n    return lambda observation: {str(i): 'stay' for i in range(1 << 20)}\n"
        ),
    ],
    ids=["agent", "python"],
)
def test_a_campaigns_policy_sending_a_line_over_the_bound_is_a_failed_row_naming_it(tmp_path, attacker):
    with open_folder() as folder:
        done = evaluate(write_hostile_campaign(folder, attacker), tmp_path / "R")
    assert done.returncode == 0, done.stderr
    rows = honest_rows(tmp_path / "R")
    for seed in SEEDS:
        row = rows[("attacker", seed)]
        assert row["status"] == "failed"
        assert re.fullmatch(r"step \d+: the answer is longer than [\d,]+ bytes\.", row["error"]), row["error"]
        assert rows[("greedy", seed)]["status"] == "ok"


@pytest.mark.parametrize("active", [0, 1, 37])
def test_the_reader_takes_a_line_of_the_bound_and_cuts_one_byte_more(active):
    bound = answer_bound(active)
    assert bound == 4096 + 128 * active
    at = b" " * bound + b"\n"
    assert read_line(io.BufferedReader(io.BytesIO(at + b"next\n")), bound) == at
    over = io.BufferedReader(io.BytesIO(b" " * (bound + 1) + b"\n"))
    assert read_line(over, bound) == b" " * (bound + 1)  # no newline: longer than the bound
    assert over.read() == b"\n"  # nothing past bound + 1 was taken


def test_the_hosts_failure_line_fits_the_smallest_bound_whatever_the_policys_message():
    from ember.isolation.host import ERROR_KEY, LINE_BYTES, fitted

    assert answer_bound(0) == LINE_BYTES
    line = fitted(
        lambda kind, message: {ERROR_KEY: {"type": kind, "message": message}}, "E" * 5000, "\U0001f525" * 2000
    )
    assert len(line) - 1 <= LINE_BYTES and line.endswith(b"\n")
    value = json.loads(line)[ERROR_KEY]
    assert value["type"] == "E" * 200 and value["message"] and set(value["message"]) == {"\U0001f525"}
    assert os.linesep.encode() not in line[:-1]
