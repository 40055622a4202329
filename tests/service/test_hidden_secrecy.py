"""A bundle's own words never reach a team before the reveal (service.md §9): real servers, real jobs.

The bundle prints, on its stderr and in the exception it raises, a marker
made of what it observed of the hidden episode's fire (a channel from
the secret seed to the team's next bundle).  Before the reveal the marker
is in no answer the team can get, no page, no log entry: the job's JSON
has no ``stderr_tail`` and its failures are EMBER's fixed reasons.  After
the reveal the team reads its own stderr tail and the full reasons.  A
finished job's working folder is gone; its stderr tails (at most 64 KiB
per episode) are in the database.
"""

import json
import os

import httpx
import pytest

from ember.service.hidden.jobs import FIXED_REASONS, STDERR_KEPT

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService, wait_folder_gone, wait_served
from helpers.service import ember

MARKER = "ember-leak-"

#: A python policy that prints its fire observation (hashed: a number only the hidden seed gives) on stderr,
#: after 100 KiB of filler, then raises with it in the exception's message.
LEAKING_POLICY = f"""
import hashlib
import json
import sys


def make_policy(scenario):
    steps = []

    def policy(observation):
        steps.append(1)
        if len(steps) < 12:  # the fire has spread by then, as the hidden seed made it
            return {{person["person_id"]: "stay" for person in observation["people"]}}
        seen = hashlib.sha256(json.dumps(observation, sort_keys=True).encode()).hexdigest()[:16]
        for _ in range(1600):
            print("filler " * 9, file=sys.stderr)
        print(f"{MARKER}{{seen}}", file=sys.stderr, flush=True)
        raise RuntimeError(f"{MARKER}{{seen}}")

    return policy
"""


@pytest.fixture
def hidden():
    made = HiddenService(hidden_seeds=2, teams=("alpha",))
    yield made
    made.close()


def team_can_read(hidden, team, job_id):
    """Every answer team ``team`` (or anyone) can get about the board and its job: {what: text}."""
    base = "/api/boards/office"
    paths = [
        "/", "/boards/office", "/api", base, f"{base}/log", f"{base}/submissions", f"{base}/hidden/ranking.json",
        f"{base}/hidden/statistics.json", f"{base}/hidden/episodes.jsonl", f"{base}/hidden/live/ranking.json",
        f"{base}/hidden/live/statistics.json", f"{base}/hidden/live/episodes.jsonl", f"{base}/ranking.json",
        f"{base}/statistics.json", f"{base}/episodes.jsonl", f"/api/jobs/{job_id}",
    ]  # fmt: skip
    with hidden.client(team) as client:
        return {path: client.get(path).text for path in paths}


def test_a_bundle_printing_its_fire_reaches_its_team_only_after_the_reveal(hidden):
    server = hidden.serve()
    job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "leak.tar.gz"), policy=LEAKING_POLICY))
    status = hidden.wait_job("alpha", job)
    assert (status["state"], status["done"], status["total"]) == ("done", 2, 2), status
    # The job's JSON: no stderr tail, each failure one of EMBER's fixed reasons (this one: the policy raised).
    assert "stderr_tail" not in status, status
    assert status["failures"] == [{"scenario_id": "office-floor", "error": "raised"}] * 2
    assert "raised" in FIXED_REASONS
    version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
    wait_served(server, "/boards/office", version=version)  # the page of the board with the job's rows
    readable = team_can_read(hidden, "alpha", job)
    assert [path for path, text in readable.items() if MARKER in text] == [], readable[f"/api/jobs/{job}"]
    # Job folders do not pile up: the finished job's working folder is gone, its tails are in the database.
    wait_folder_gone(hidden.data, job)
    tails = hidden.database_rows("SELECT stderr FROM hidden_rows WHERE job_id = :job", job=job)
    markers = []
    for (tail,) in tails:
        tail = bytes(tail)  # more than 64 KiB were written: the end is kept, from a line's start
        assert len(tail) <= STDERR_KEPT and tail.startswith(b"filler ")
        markers += [line for line in tail.decode().splitlines() if line.startswith(MARKER)]
    assert len(markers) == 2

    ember("service", "board", "reveal", hidden.data, "office")
    revealed = hidden.job("alpha", job).json()
    assert len(revealed["stderr_tail"]) == 20 and revealed["stderr_tail"][-1].endswith(markers[-1]), revealed
    assert sorted(f["error"] for f in revealed["failures"]) == sorted(
        f"step 12: the python policy raised RuntimeError: {marker}" for marker in markers
    ), revealed["failures"]
    # The marker is the one the bundle saw: each episode's own fire, the same as in the revealed rows' reasons.
    rows = wait_served(server, "/api/boards/office/hidden/episodes.jsonl", version=version + 1)
    errors = sorted(json.loads(line)["error"] for line in rows.content.splitlines())
    assert errors == sorted(f["error"] for f in revealed["failures"])


@pytest.mark.parametrize(
    "error, reason",
    [
        (
            "the python policy walker:make_policy could not be made: ValueError: ember-leak-1 raised",
            "could not be made",
        ),
        ("step 3: the python policy raised KeyError: 'timed out'", "raised"),
        ("step 9: the agent did not answer within 1 s (step_timeout). exited with status", "timed out"),
        ("step 2: the episode did not end within 5 s (episode_timeout).", "timed out"),
        ("the policy exceeded its memory limit of 512 MiB", "exceeded its memory limit"),
        ("step 0: the agent sent illegal actions: {'ember-leak-2': 'fly'}", "illegal action"),
        ("step 0: the agent sent a line that is not JSON (Expecting value): 'ember-leak-3'.", "illegal action"),
        ("step 1: the agent's answer is longer than 1048576 bytes.", "answer too long"),
        ("step 4: the agent exited with status 3 before answering the observation.", "exited"),
        ("step 4: the agent was killed by SIGKILL before answering the observation.", "exited"),
        ("ember-leak-4", "exited"),
    ],
)
def test_every_failure_is_told_as_one_fixed_reason_whatever_the_policy_wrote(error, reason):
    from ember.service.hidden.jobs import fixed_reason

    assert fixed_reason(error) == reason
    assert reason in FIXED_REASONS


def test_a_stderr_tail_is_its_last_64_kib_from_a_line_start():
    from ember.service.hidden.jobs import stderr_tail

    short = b"one\ntwo\n"
    assert stderr_tail(short) == short
    whole_lines = b"x" * 10 + b"\n" + b"y" * (STDERR_KEPT - 1) + b"\n"  # the tail starts right after a newline
    assert stderr_tail(whole_lines) == b"y" * (STDERR_KEPT - 1) + b"\n"
    lines = b"".join(b"line %06d\n" % number for number in range(10_000))
    kept = stderr_tail(lines)
    assert len(kept) <= STDERR_KEPT and lines.endswith(kept) and kept.startswith(b"line ")
    assert len(kept) > STDERR_KEPT - len(b"line 000000\n")
    one_line = b"z" * (STDERR_KEPT + 5)  # no line start in it: the last 64 KiB
    assert stderr_tail(one_line) == b"z" * STDERR_KEPT
