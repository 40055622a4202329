"""Faults with real processes (service.md §8): a server killed (SIGKILL) during an upload and during its commit,
the database down or locked, a full record store, two server processes racing for one key."""

import concurrent.futures
import contextlib
import gzip
import os
import signal
import socket
import sqlite3
import subprocess
import time

import httpx
import pytest

from helpers.service import Server, Service, record_of, wait_for


def new_submission(client, policy="p"):
    response = client.post("/api/boards/office/submissions", json={"policy": policy})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def rows_of(service, submission):
    with service.client("alpha") as alpha:
        return alpha.get(f"/api/submissions/{submission}").json()["rows"]


def temporary_files(service):
    return [name for name in service.stored_files() if name.startswith("tmp/")]


def stored_records(service):
    return [name for name in service.stored_files() if ".record" in name and not name.startswith("tmp/")]


def begin_upload(service, submission, body, sent):
    """A socket with an upload's headers and its first ``sent`` body bytes written."""
    sock = socket.create_connection(("127.0.0.1", service.server.port), timeout=30)
    head = (
        f"PUT /api/submissions/{submission}/episodes/office-floor/0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {service.tokens['alpha']}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body[:sent])
    return sock


def temporary_size(service):
    names = temporary_files(service)
    if len(names) != 1:
        return -1
    return os.path.getsize(os.path.join(service.data, "records", names[0]))


@contextlib.contextmanager
def database_locked(service, database):
    """The database's write lock (SQLite) or the board's row lock (PostgreSQL) held by another process."""
    if database is None:
        connection = sqlite3.connect(os.path.join(service.data, "ember.db"), timeout=0, isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            connection.execute("ROLLBACK")
            connection.close()
        return
    import psycopg

    url = database.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as connection:
        connection.execute("SELECT id FROM boards WHERE name = 'office' FOR UPDATE")
        yield
        connection.rollback()


@pytest.fixture
def plain(runs):
    return gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))


def upload_again_works(service, submission, body):
    with service.client("alpha") as alpha:
        response = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=body)
    assert response.status_code == 201, response.text
    assert len(rows_of(service, submission)) == 1


def test_sigkill_during_an_upload_leaves_nothing_and_the_upload_works_again(service, plain):
    service.serve()
    with service.client("alpha") as alpha:
        submission = new_submission(alpha)
    sock = begin_upload(service, submission, plain, 30_000)
    wait_for(lambda: temporary_size(service) == 30_000, what="the upload's bytes in a temporary file")
    service.server.kill()
    sock.close()
    assert len(temporary_files(service)) == 1  # the killed server's file, until the next start sweeps it
    service.server = Server(service.data)
    assert temporary_files(service) == [] and stored_records(service) == []
    assert rows_of(service, submission) == []
    upload_again_works(service, submission, plain)


def test_sigkill_during_the_commit_leaves_no_row_and_the_upload_works_again(service, database, plain):
    service.serve()
    with service.client("alpha") as alpha:
        submission = new_submission(alpha)
    sock = begin_upload(service, submission, plain, len(plain) - 10)
    wait_for(lambda: temporary_size(service) == len(plain) - 10, what="all but the last bytes received")
    with database_locked(service, database):
        sock.sendall(plain[-10:])
        # Verified and renamed to its content address: the server now waits for the database to commit.
        wait_for(lambda: stored_records(service), what="the record at its content address")
        service.server.kill()
    sock.close()
    kept = stored_records(service)
    service.server = Server(service.data)
    assert rows_of(service, submission) == [] and temporary_files(service) == []
    # A stored record no row names stays for an hour (§8's sweep rule), then goes at the next start.
    assert stored_records(service) == kept
    service.server.stop()
    old = time.time() - 2 * 3600
    os.utime(os.path.join(service.data, "records", kept[0]), (old, old))
    service.server = Server(service.data)
    assert stored_records(service) == []
    upload_again_works(service, submission, plain)


def test_postgresql_stopped_is_503_saying_nothing_of_the_setup_to_anonymous_and_team_callers(tmp_path, postgres, plain):
    # Its URL, host, port and user tell a caller where the database is and who connects to it (service.md §9).
    url = postgres.database().replace("postgres@", "postgres:s3cret@")
    service = Service(str(tmp_path), url)
    service.serve()
    try:
        with service.client("alpha") as alpha:
            submission = new_submission(alpha)
            postgres.stop()
            try:
                for response in (
                    httpx.get(f"{service.server.url}/api/boards/office"),
                    httpx.get(f"{service.server.url}/boards/office"),
                    alpha.get(f"/api/submissions/{submission}"),
                    alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=plain),
                    alpha.post("/api/boards/office/submissions", json={"policy": "q"}),
                ):
                    assert response.status_code == 503 and response.headers["retry-after"]
                    assert response.json() == {"error": "the database is unavailable"}
                    assert str(postgres.port) not in response.text and "127.0.0.1" not in response.text
                assert service.stored_files() == []
            finally:
                postgres.start()
        assert service.server.alive()
        log = service.server.read_log()
        assert f"the database postgresql+psycopg://postgres:***@127.0.0.1:{postgres.port}/" in log
        assert "s3cret" not in log
        upload_again_works(service, submission, plain)
    finally:
        service.close()


def test_sqlite_locked_is_503_and_nothing_is_accepted(tmp_path, plain):
    service = Service(str(tmp_path))
    service.serve()
    try:
        with service.client("alpha") as alpha:
            submission = new_submission(alpha)
            with database_locked(service, None):
                # Reads go on in WAL mode; every write waits 5 s for the lock, then answers 503.
                assert httpx.get(f"{service.server.url}/api/boards/office").status_code == 200
                for response in (
                    alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=plain),
                    alpha.post("/api/boards/office/submissions", json={"policy": "q"}),
                ):
                    assert response.status_code == 503 and response.headers["retry-after"]
                    assert response.json() == {"error": "the database is unavailable"}
            assert "database is locked" in service.server.read_log()
            assert service.stored_files() == [] and rows_of(service, submission) == []
        upload_again_works(service, submission, plain)
    finally:
        service.close()


@pytest.fixture
def small_record_store(service):
    """DATA/records on a tmpfs of 2 MiB, all but 16 KiB of it taken by a filler file."""
    records = os.path.join(service.data, "records")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", records], check=True)
    try:
        info = os.statvfs(records)
        with open(os.path.join(records, "filler"), "wb") as handle:
            handle.write(b"\0" * (info.f_bavail * info.f_frsize - 16 * 1024))
        yield service
    finally:
        if service.server is not None:
            service.server.stop()
        subprocess.run(["umount", records], check=True)


def test_a_full_record_store_is_507_and_nothing_is_accepted(small_record_store, plain):
    service = small_record_store
    service.serve()
    with service.client("alpha") as alpha:
        submission = new_submission(alpha)
        response = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=plain)
    assert response.status_code == 507, response.text
    assert response.json()["error"].startswith(f"the record store {os.path.join(service.data, 'records')} is full")
    assert service.stored_files() == ["filler"] and rows_of(service, submission) == []
    assert service.server.alive()


def test_two_server_processes_accept_one_record_for_one_key(service, runs):
    service.serve(workers=2)
    bodies = [record_of(runs["alpha"][0], "greedy", 0), record_of(runs["beta"][0], "stay", 0)] * 2
    with service.client("alpha") as alpha:
        submission = new_submission(alpha)

    def send(body):
        with httpx.Client(base_url=service.server.url, headers=service.headers("alpha"), timeout=60) as client:
            while True:  # as ember submit does: a 429 or 503 (a verification slot taken) is tried again
                answer = client.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=body)
                if answer.status_code not in (429, 503):
                    return answer
                time.sleep(0.2)

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(send, bodies))
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses.count(201) == 1, [(a.status_code, a.text) for a in answers]
    accepted = next(answer.json() for answer in answers if answer.status_code == 201)
    for answer in answers:
        if answer.status_code == 200:
            assert answer.json() == accepted  # the same record again
        elif answer.status_code != 201:
            assert answer.status_code == 409 and "another record" in answer.json()["error"]
    assert rows_of(service, submission) == [accepted]


def _forked_by_forkserver(pid):
    """Whether ``pid`` is a process a multiprocessing fork server forked (a verifying process)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{parent}/cmdline", "rb") as handle:
            return b"multiprocessing.forkserver" in handle.read()
    except (OSError, ValueError, IndexError):
        return False


def verifying_processes(service):
    """{pid: nice} of the verifying processes of the server's session."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.getsid(pid) != service.server.process.pid or not _forked_by_forkserver(pid):
                continue
            with open(f"/proc/{pid}/stat") as handle:
                found[pid] = int(handle.read().rsplit(")", 1)[1].split()[16])
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_an_upload_is_verified_in_a_process_of_its_own_and_its_death_is_a_503_leaving_nothing(service, plain):
    # Verified in the server's own threads, an upload held their interpreter lock against every request;
    # in a process of its own, at a lower priority, the kernel serves the requests first.
    service.serve()
    (pid,) = wait_for(lambda: verifying_processes(service), what="the spare verifying process")
    with service.client("alpha") as alpha:
        submission = new_submission(alpha)
    sock = begin_upload(service, submission, plain, 30_000)
    wait_for(lambda: temporary_size(service) == 30_000, what="the upload's bytes in a temporary file")
    # The spare verifies the upload, and the next spare waits beside it: both at nice 10.
    verifiers = wait_for(lambda: len(verifying_processes(service)) == 2 and verifying_processes(service),
                         what="the upload's verifying process and the next spare")  # fmt: skip
    assert pid in verifiers and list(verifiers.values()) == [10, 10], verifiers
    os.kill(pid, signal.SIGKILL)
    sock.sendall(plain[30_000:])
    status, answer = read_answer(sock)
    assert status == 503 and b"retry-after" in answer.lower(), answer[:400]
    assert b"send it again" in answer
    assert temporary_files(service) == [] and stored_records(service) == [] and rows_of(service, submission) == []
    assert service.server.process.poll() is None
    upload_again_works(service, submission, plain)
    # Each ends with its upload (by itself: the answer does not wait for its exit); the spare started for the
    # next upload waits.
    wait_for(lambda: len(verifying_processes(service)) == 1, what="only the next upload's spare left")


def read_answer(sock):
    """(status, bytes) of the HTTP answer read from ``sock`` to its end."""
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    sock.close()
    return int(answer.split(b" ", 2)[1]), answer


def test_each_upload_is_verified_by_the_spare_started_before_its_request_and_never_by_another(service, plain):
    service.serve()
    with service.client("alpha") as alpha:
        submissions = [new_submission(alpha, "one"), new_submission(alpha, "two")]
    used = []
    for submission in submissions:
        (spare,) = wait_for(lambda: len(verifying_processes(service)) == 1 and verifying_processes(service),
                            what="one spare waiting")  # fmt: skip
        assert spare not in used  # a process verifies one upload, then ends: never handed out again
        sock = begin_upload(service, submission, plain, 30_000)
        wait_for(lambda: temporary_size(service) == 30_000, what="the upload's bytes in a temporary file")
        verifiers = wait_for(lambda: len(verifying_processes(service)) == 2 and verifying_processes(service),
                             what="the upload's verifying process and the next spare")  # fmt: skip
        assert spare in verifiers, (spare, verifiers)  # the process existed before the request arrived
        sock.sendall(plain[30_000:])
        assert read_answer(sock)[0] == 201
        used.append(spare)
        wait_for(lambda s=spare: s not in verifying_processes(service), what="the upload's process gone")
    assert all(len(rows_of(service, submission)) == 1 for submission in submissions)


def test_a_spare_killed_before_its_upload_costs_that_upload_nothing(service, plain):
    service.serve()
    with service.client("alpha") as alpha:
        submissions = [new_submission(alpha, "one"), new_submission(alpha, "two")]
    for submission, reaped in zip(submissions, (True, False), strict=True):
        (spare,) = wait_for(lambda: len(verifying_processes(service)) == 1 and verifying_processes(service),
                            what="one spare waiting")  # fmt: skip
        os.kill(spare, signal.SIGKILL)
        if reaped:  # found dead when it is taken; else the upload may reach it first, and its START fails
            wait_for(lambda s=spare: s not in verifying_processes(service), what="the killed spare reaped")
        upload_again_works(service, submission, plain)  # 201: verified by a process started for it
        assert spare not in verifying_processes(service)
    assert temporary_files(service) == [] and len(stored_records(service)) == 1
    wait_for(lambda: len(verifying_processes(service)) == 1, what="only the next upload's spare left")


def session_processes(leader):
    """The pids of the processes of ``leader``'s session."""
    found = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError):
            if entry.isdigit() and os.getsid(int(entry)) == leader:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_no_spare_outlives_serve(service, how):
    """SIGTERM to the serve parent alone (not its process group): each server process ends its spare as it
    shuts down; SIGKILL: a spare sees its pipe close and ends by itself."""
    workers = 2 if how == "SIGTERM" else 1
    server = service.serve(workers=workers)
    spares = wait_for(lambda: len(verifying_processes(service)) == workers and verifying_processes(service),
                      what="a spare for each server process")  # fmt: skip
    os.kill(server.process.pid, getattr(signal, how))
    server.process.wait(timeout=60)
    server.log.close()
    wait_for(lambda: session_processes(server.process.pid) == [], what="no process of the server's session left")
    for pid in spares:
        assert not os.path.exists(f"/proc/{pid}")
