"""Several service hosts (docs/service.md, "Several hosts"): two ``serve`` processes on different ports and
service directories, as two machines would run them, sharing one PostgreSQL database and one shared store
(``record_store``).

Uploads to either are accepted once per key; each board's derived files are
made by the one holding its lease and served by both; a hidden job runs on
one of them; killing one (SIGKILL) loses nothing: the other takes the
board's lease and the job over and finishes them, and an upload in flight
on one survives the other's start-up sweep.
"""

import concurrent.futures
import gzip
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import httpx
import pytest
import sqlalchemy as sa

from ember.service import leases, tables
from ember.service.config import read_config
from ember.service.database import Database

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService, rerun_locally, wait_folder_gone, wait_served, without_elapsed
from helpers.service import Server, ember, record_of, wait_for

#: The walker, slowed where it makes its policy: a job of 4 episodes takes seconds.
SLOW_POLICY = """
import time


def make_policy(scenario):
    time.sleep(1.5)

    def policy(observation):
        return {person["person_id"]: "stay" for person in observation["people"]}

    return policy
"""


class TwoHosts:
    """Board ``office`` (one open seed, ``hidden_seeds`` secret ones) on PostgreSQL, made from host A's DATA;
    host B's DATA holds copies of A's ``service.toml`` (the database, the shared store) and key pair."""

    def __init__(self, database, hidden_seeds=4, teams=("alpha", "beta", "gamma")):
        self.hidden = HiddenService(hidden_seeds=hidden_seeds, teams=teams, database=database)
        self.store = os.path.join(self.hidden.root, "shared-store")
        first = self.hidden.data
        path = os.path.join(first, "service.toml")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f'record_store = "{self.store}"\n' + text)
        ember("service", "init", first)  # makes the shared store's records/
        second = os.path.join(self.hidden.root, "DATA-B")
        os.mkdir(second, 0o700)
        for name in ("service.toml", "signing.key", "signing.pub"):
            shutil.copy2(os.path.join(first, name), os.path.join(second, name))
        self.datas = {"A": first, "B": second}
        self.servers = {}

    def start(self, host):
        self.servers[host] = Server(self.datas[host])
        return self.servers[host]

    def url(self, host):
        return self.servers[host].url

    def headers(self, team):
        return {"Authorization": f"Bearer {self.hidden.tokens[team]}"}

    def host_of(self, holder):
        """The host whose ``serve`` process a lease's holder names (``HOST:PID:RANDOM``)."""
        pid = int(holder.split(":")[1])
        (host,) = [name for name, server in self.servers.items() if server.process.pid == pid]
        return host

    def close(self):
        for server in self.servers.values():
            server.stop()
        self.hidden.close()


@pytest.fixture
def hosts(postgres):
    made = TwoHosts(postgres.database())
    yield made
    made.close()


def new_submission(hosts, host, team, policy):
    answer = httpx.post(f"{hosts.url(host)}/api/boards/office/submissions", json={"policy": policy},
                        headers=hosts.headers(team), timeout=60)  # fmt: skip
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def put(hosts, host, team, submission, body):
    """An upload of seed 0, tried again on 429/503 as ``ember submit`` does."""
    url = f"{hosts.url(host)}/api/submissions/{submission}/episodes/office-floor/0"
    while True:
        answer = httpx.put(url, content=body, headers=hosts.headers(team), timeout=60)
        if answer.status_code not in (429, 503):
            return answer
        time.sleep(0.2)


def close(hosts, host, team, submission):
    answer = httpx.post(f"{hosts.url(host)}/api/submissions/{submission}/close", headers=hosts.headers(team))
    assert answer.status_code == 200, answer.text


def board_lease(hosts):
    """(holder, expires_at) of board office's lease."""
    db = Database(read_config(hosts.datas["A"]).database)
    try:
        return leases.holder_of(db, leases.BOARD, "office")
    finally:
        db.dispose()


def board_version(hosts, host):
    return httpx.get(f"{hosts.url(host)}/api/boards/office").json()["version"]


def finish_upload_by_hand(port, token, submission, body, sent, before_the_rest):
    """An upload whose first ``sent`` bytes go, then ``before_the_rest()`` runs, then the rest: its status."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        head = (
            f"PUT /api/submissions/{submission}/episodes/office-floor/0 HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body[:sent])
        before_the_rest()
        sock.sendall(body[sent:])
        answer = b""
        while b"\r\n" not in answer:
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    return int(answer.split()[1])


def temporary_files(store):
    folder = os.path.join(store, "records", "tmp")
    return [os.path.join(folder, name) for name in os.listdir(folder)] if os.path.isdir(folder) else []


def test_a_lease_is_its_holders_until_it_expires_or_its_process_is_gone(postgres):
    db = Database(postgres.database())
    try:
        db.migrate()
        elsewhere = "another-machine:4242:0a0a0a0a"  # a host this one cannot see: its lease is waited out
        here = leases.holder_name()
        assert leases.take(db, leases.BOARD, "office", elsewhere, 60) is True
        assert leases.take(db, leases.BOARD, "office", here, 60) is False
        assert leases.renew(db, leases.BOARD, "office", elsewhere, 60) is True
        assert leases.take(db, leases.BOARD, "other", here, 60) is True  # one lease per board
        with db.transaction() as connection:  # the other machine stopped renewing a minute ago
            connection.execute(
                sa.update(tables.leases).where(tables.leases.c.name == "office").values(expires_at=leases.later(-60))
            )
        assert leases.take(db, leases.BOARD, "office", here, 60) is True
        assert leases.renew(db, leases.BOARD, "office", elsewhere, 60) is False  # taken over: it must stop
        assert leases.holder_of(db, leases.BOARD, "office")[0] == here
        # A holder of this machine whose process ended is taken over at once, its lease still running.
        ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        dead = f"{socket.gethostname()}:{int(ended.stdout)}:0b0b0b0b"
        leases.release(db, leases.BOARD, "office", here)
        assert leases.take(db, leases.BOARD, "office", dead, 60) is True
        assert leases.take(db, leases.BOARD, "office", here, 60) is True
    finally:
        db.dispose()


def test_two_hosts_accept_each_key_once_serve_one_hosts_derived_files_and_lose_nothing_when_one_is_killed(hosts, runs):
    alpha_record = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))  # plain: over 30,000 bytes
    hosts.start("A")
    alpha = new_submission(hosts, "A", "alpha", "planner")
    # An upload in flight on A while B starts: B's start-up sweep leaves A's temporary file alone.
    token = hosts.hidden.tokens["alpha"]

    def start_b_midway():
        wait_for(lambda: [p for p in temporary_files(hosts.store) if os.path.getsize(p) == 30_000],
                 what="A's upload in a temporary file of the shared store")  # fmt: skip
        hosts.start("B")
        assert len(temporary_files(hosts.store)) == 1

    assert finish_upload_by_hand(hosts.servers["A"].port, token, alpha, alpha_record, 30_000, start_b_midway) == 201
    # One key sent to both hosts at once, the same record twice and another record twice: one acceptance.
    beta = new_submission(hosts, "B", "beta", "planner")
    bodies = [record_of(runs["beta"][0], "stay", 0), record_of(runs["gamma"][0], "random", 0)]
    sends = [("A", bodies[0]), ("B", bodies[0]), ("A", bodies[1]), ("B", bodies[1])]
    with concurrent.futures.ThreadPoolExecutor(len(sends)) as pool:
        answers = list(pool.map(lambda send: put(hosts, send[0], "beta", beta, send[1]), sends))
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200, 201, 409, 409], [(a.status_code, a.text) for a in answers]
    accepted = next(answer.json() for answer in answers if answer.status_code == 201)
    assert [answer.json() for answer in answers if answer.status_code == 200] == [accepted]
    rows = hosts.hidden.database_rows("SELECT seed FROM rows WHERE submission_id = :id", id=beta)
    assert rows == [(0,)]
    close(hosts, "B", "alpha", alpha)
    close(hosts, "A", "beta", beta)
    # The derived files: made by the one host holding the board's lease, served alike by both.
    version = board_version(hosts, "A")
    served = {host: wait_served(hosts.servers[host], "/api/boards/office/ranking.json", version=version).content
              for host in ("A", "B")}  # fmt: skip
    assert served["A"] == served["B"] and b"alpha.planner" in served["A"] and b"beta.planner" in served["A"]
    holder, _ = board_lease(hosts)
    maker = hosts.host_of(holder)
    survivor = "B" if maker == "A" else "A"
    episodes = wait_served(hosts.servers[survivor], "/api/boards/office/episodes.jsonl", version=version).content
    lines = episodes.splitlines()
    assert sorted(json.loads(line)["policy"] for line in lines) == ["alpha.planner", "beta.planner"]
    # The lease holder killed: the survivor takes the board's lease over and derives the next version.
    hosts.servers[maker].kill()
    withdrawn = httpx.post(f"{hosts.url(survivor)}/api/submissions/{beta}/withdraw", headers=hosts.headers("beta"))
    assert withdrawn.status_code == 200, withdrawn.text
    version = board_version(hosts, survivor)
    episodes = wait_served(hosts.servers[survivor], "/api/boards/office/episodes.jsonl", version=version).content
    assert hosts.host_of(board_lease(hosts)[0]) == survivor
    assert [json.loads(line)["policy"] for line in episodes.splitlines()] == ["alpha.planner"]
    for line in lines:  # every accepted record is in the shared store, served by the survivor
        row = json.loads(line)
        assert httpx.get(f"{hosts.url(survivor)}/api/records/{row['record_sha256']}").status_code == 200 or (
            row["policy"] == "beta.planner"  # a withdrawn submission's records are no longer served
        )
    assert len(hosts.hidden.database_rows("SELECT id FROM rows")) == 2  # nothing lost: a withdrawn row stays
    hosts.start(maker)  # the killed host comes back: its start loses nothing of the other's
    assert board_version(hosts, maker) == board_version(hosts, survivor)
    assert wait_served(hosts.servers[maker], "/api/boards/office/episodes.jsonl", version=version).content == episodes


def test_a_hidden_job_runs_on_one_host_and_the_other_finishes_it_when_that_one_is_killed(hosts):
    hosts.start("A")
    hosts.start("B")
    hidden = hosts.hidden
    hidden.server = hosts.servers["B"]
    bundle = python_bundle(os.path.join(hidden.root, "slow.tar.gz"), policy=SLOW_POLICY)
    job = hidden.submit("alpha", bundle)  # to B; its bundle is in the shared store, for whichever host runs it
    midway = hidden.wait_job("alpha", job, until=lambda status: 1 <= status["done"] < status["total"])
    assert midway["state"] == "running"
    ((owner,),) = hidden.database_rows("SELECT owner FROM jobs WHERE id = :job", job=job)
    runner = hosts.host_of(owner)
    survivor = "B" if runner == "A" else "A"
    hosts.servers[runner].kill()
    hidden.server = hosts.servers[survivor]
    status = hidden.wait_job("alpha", job)
    assert (status["state"], status["done"], status["total"], status["failures"]) == ("done", 4, 4, []), status
    ((owner,),) = hidden.database_rows("SELECT owner FROM jobs WHERE id = :job", job=job)
    assert hosts.host_of(owner) == survivor
    stored = hidden.database_rows("SELECT scenario_id, seed FROM hidden_rows WHERE job_id = :job", job=job)
    assert len(stored) == len(set(stored)) == 4  # every episode once
    ember("service", "board", "reveal", hosts.datas[survivor], "office")
    version = board_version(hosts, survivor)
    served = wait_served(hidden.server, "/api/boards/office/hidden/episodes.jsonl", version=version)
    lines = served.content.splitlines()
    log = [json.loads(line) for line in httpx.get(f"{hidden.server.url}/api/boards/office/log").text.splitlines()]
    entries = [entry for entry in log if entry["event"] == "hidden_row"]
    assert len(entries) == len(lines) == 4
    assert sorted(hashlib.sha256(line).hexdigest() for line in lines) == sorted(e["row_sha256"] for e in entries)
    keys = hidden.secret()["keys"]
    again = rerun_locally(hidden, keys, bundle, "alpha.walker")
    assert sorted(map(json.dumps, again)) == sorted(json.dumps(without_elapsed(json.loads(line))) for line in lines)
    wait_folder_gone(hosts.store, job)  # its working folder goes once it is done


def test_a_killed_hosts_upload_slots_do_not_hold_its_team_back_on_the_other_host(hosts, runs):
    record = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))
    hosts.start("A")
    hosts.start("B")
    submission = new_submission(hosts, "B", "alpha", "planner")
    sock = socket.create_connection(("127.0.0.1", hosts.servers["A"].port), timeout=60)
    head = (
        f"PUT /api/submissions/{submission}/episodes/office-floor/0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {hosts.hidden.tokens['alpha']}\r\nContent-Length: {len(record)}\r\n\r\n"
    )
    sock.sendall(head.encode() + record[:30_000])
    wait_for(lambda: [p for p in temporary_files(hosts.store) if os.path.getsize(p) == 30_000],
             what="A's upload in a temporary file of the shared store")  # fmt: skip
    url = f"{hosts.url('B')}/api/submissions/{submission}/episodes/office-floor/0"
    busy = httpx.put(url, content=record, headers=hosts.headers("alpha"), timeout=60)
    assert busy.status_code == 429 and "verifications running" in busy.json()["error"], busy.text  # counted on B
    ((holder,),) = hosts.hidden.database_rows("SELECT DISTINCT holder FROM in_flight")
    assert hosts.host_of(holder) == "A"
    hosts.servers["A"].kill()
    sock.close()
    assert put(hosts, "B", "alpha", submission, record).status_code == 201  # A's slots freed, not held for ever
    assert hosts.hidden.database_rows("SELECT id FROM in_flight WHERE holder = :h", h=holder) == []
