"""The limits of service.md §3, counted in the database: each with its status code (and Retry-After)."""

import concurrent.futures
import contextlib
import gzip
import select
import socket
import threading

import pytest

from helpers.service import Service, record_of, wait_for


@pytest.fixture
def limited(tmp_path, database, request):
    made = Service(str(tmp_path), database, request.param)
    made.serve()
    yield made
    made.close()


@contextlib.contextmanager
def stalled_upload(service, team, submission, body):
    """An upload whose body has begun and then waits (its slots are held until the socket closes)."""
    sock = socket.create_connection(("127.0.0.1", service.server.port), timeout=30)
    head = (
        f"PUT /api/submissions/{submission}/episodes/office-floor/0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {service.tokens[team]}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body[:1000])
    try:
        yield
    finally:
        sock.close()


def new_submission(client, policy="p"):
    response = client.post("/api/boards/office/submissions", json={"policy": policy})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def in_flight(service, kind):
    import sqlalchemy as sa

    from ember.service import tables
    from ember.service.registry import open_service

    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            c = tables.in_flight.c
            return connection.execute(sa.select(sa.func.count()).where(c.kind == kind)).scalar_one()
    finally:
        db.dispose()


@pytest.mark.parametrize("limited", [{"submissions_per_day": 2}], indirect=True)
def test_new_submissions_per_team_and_day_429(limited):
    with limited.client("alpha") as alpha, limited.client("beta") as beta:
        new_submission(alpha, "a")
        new_submission(alpha, "b")
        third = alpha.post("/api/boards/office/submissions", json={"policy": "c"})
        assert third.status_code == 429 and third.headers["retry-after"] and "today" in third.json()["error"]
        new_submission(beta, "a")  # another team's count is its own


@pytest.mark.parametrize("limited", [{"uploads_per_team": 1, "max_verifications": 4}], indirect=True)
def test_uploads_in_flight_per_team_429(limited, runs):
    body = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))
    with limited.client("alpha") as alpha:
        first, second = new_submission(alpha, "a"), new_submission(alpha, "b")
        with stalled_upload(limited, "alpha", first, body):
            wait_for(lambda: in_flight(limited, "upload") == 1, what="the first upload in flight")
            refused = alpha.put(f"/api/submissions/{second}/episodes/office-floor/0", content=body)
            assert refused.status_code == 429 and refused.headers["retry-after"]
        wait_for(lambda: in_flight(limited, "upload") == 0, what="the slot given back")
        accepted = alpha.put(f"/api/submissions/{second}/episodes/office-floor/0", content=body)
        assert accepted.status_code == 201


@pytest.mark.parametrize("limited", [{"max_verifications": 1}], indirect=True)
def test_verifications_on_the_server_503(limited, runs):
    body = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))
    with limited.client("alpha") as alpha, limited.client("beta") as beta:
        mine, theirs = new_submission(alpha), new_submission(beta)
        with stalled_upload(limited, "alpha", mine, body):
            wait_for(lambda: in_flight(limited, "verify") == 1, what="the first verification")
            refused = beta.put(f"/api/submissions/{theirs}/episodes/office-floor/0", content=body)
            assert refused.status_code == 503 and refused.headers["retry-after"]
            assert "verifying 1 records" in refused.json()["error"]
        wait_for(lambda: in_flight(limited, "verify") == 0, what="the slot given back")
        assert beta.put(f"/api/submissions/{theirs}/episodes/office-floor/0", content=body).status_code == 201


@pytest.mark.parametrize("limited", [{"max_decompressed_bytes": 50_000}], indirect=True)
def test_a_record_longer_decompressed_than_the_limit_is_422(limited, runs):
    compressed = record_of(runs["alpha"][0], "greedy", 0)
    assert len(compressed) < 50_000 < len(gzip.decompress(compressed))
    with limited.client("alpha") as alpha:
        submission = new_submission(alpha)
        refused = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=compressed)
    assert refused.status_code == 422 and "longer than 50,000 bytes decompressed" in refused.json()["error"]
    assert limited.stored_files() == []


def answered(sock):
    """The status of the answer waiting on ``sock``, or None while it has none."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return None
    data = sock.recv(65536)
    return int(data.split(b" ", 2)[1]) if data else 0


@pytest.mark.parametrize("limited", [{"uploads_per_team": 2}], indirect=True)
def test_uploads_in_flight_are_counted_atomically_across_server_processes(limited, runs):
    # Counted and then inserted in two steps, many uploads sent at once all counted under the limit.
    limited.server.stop()
    limited.serve(workers=2)
    record = record_of(runs["alpha"][0], "greedy", 0)
    body = gzip.decompress(record)
    attempts = 16
    with limited.client("alpha") as alpha:
        submission = new_submission(alpha)
        put = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=record)
        assert put.status_code == 201  # the key is known: each upload is only compared, no verification slot
    head = (
        f"PUT /api/submissions/{submission}/episodes/office-floor/0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {limited.tokens['alpha']}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    ready = threading.Barrier(attempts)

    def begin(_):
        sock = socket.create_connection(("127.0.0.1", limited.server.port), timeout=30)
        ready.wait()
        sock.sendall(head + body[:1000])
        return sock

    with concurrent.futures.ThreadPoolExecutor(attempts) as pool:
        sockets = list(pool.map(begin, range(attempts)))
    try:
        statuses = {}

        def settled():
            for number, sock in enumerate(sockets):
                if number not in statuses:
                    status = answered(sock)
                    if status is not None:
                        statuses[number] = status
            return len(statuses) + in_flight(limited, "upload") == attempts

        wait_for(settled, what="every upload either refused or in flight")
        assert in_flight(limited, "upload") == 2, statuses
        assert sorted(statuses.values()) == [429] * (attempts - 2), statuses
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize("limited", [{"max_verifications": 4}], indirect=True)
def test_one_verification_per_team_at_once_429(limited, runs):
    body = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))
    with limited.client("alpha") as alpha, limited.client("beta") as beta:
        first, second, theirs = new_submission(alpha, "a"), new_submission(alpha, "b"), new_submission(beta)
        with stalled_upload(limited, "alpha", first, body):
            wait_for(lambda: in_flight(limited, "verify") == 1, what="the first verification")
            refused = alpha.put(f"/api/submissions/{second}/episodes/office-floor/0", content=body)
            assert (refused.status_code, refused.json()) == (
                429, {"error": "team alpha has 1 verifications running (the limit)"}
            )  # fmt: skip
            assert refused.headers["retry-after"] == "5"
            # Another team is not starved.
            own = record_of(runs["beta"][0], "stay", 0)
            assert beta.put(f"/api/submissions/{theirs}/episodes/office-floor/0", content=own).status_code == 201
        wait_for(lambda: in_flight(limited, "verify") == 0, what="the slot given back")
        assert alpha.put(f"/api/submissions/{second}/episodes/office-floor/0", content=body).status_code == 201
