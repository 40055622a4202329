"""Bundles cannot starve the others (service.md §9): one bundle upload per team in flight, and a bundle is
checked in a verifying process counted with the uploads' verifications."""

import contextlib
import gzip
import os
import socket

import pytest

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService
from helpers.service import record_of, wait_for


@pytest.fixture
def hidden(request):
    made = HiddenService(hidden_seeds=1, teams=("alpha", "beta"), limits=request.param)
    made.serve()
    yield made
    made.close()


@contextlib.contextmanager
def stalled(hidden, team, path, body):
    """A request whose body has begun and then waits (its slots are held until the socket closes)."""
    sock = socket.create_connection(("127.0.0.1", hidden.server.port), timeout=30)
    head = (
        f"{'PUT' if '/episodes/' in path else 'POST'} {path} HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {hidden.tokens[team]}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body[:1000])
    try:
        yield
    finally:
        sock.close()


def in_flight(hidden, kind):
    return hidden.database_rows("SELECT count(*) FROM in_flight WHERE kind = :kind", kind=kind)[0][0]


def post_bundle(hidden, team, data):
    with hidden.client(team) as client:
        return client.post("/api/boards/office/agents", content=data)


@pytest.mark.parametrize("hidden", [None], indirect=True)
def test_one_bundle_upload_per_team_in_flight_429(hidden):
    with open(python_bundle(os.path.join(hidden.root, "walker.tar.gz")), "rb") as handle:
        data = handle.read()
    with stalled(hidden, "alpha", "/api/boards/office/agents", data + b"\0" * 100_000):
        wait_for(lambda: in_flight(hidden, "bundle") == 1, what="the first bundle in flight")
        refused = post_bundle(hidden, "alpha", data)
        assert (refused.status_code, refused.json()) == (
            429, {"error": "team alpha has a bundle upload in flight (the limit)"}
        )  # fmt: skip
        assert refused.headers["retry-after"] == "5"
        assert post_bundle(hidden, "beta", data).status_code == 202  # another team's is its own
    wait_for(lambda: in_flight(hidden, "bundle") == 0, what="the slot given back")
    assert post_bundle(hidden, "alpha", data).status_code == 202


@pytest.mark.parametrize("hidden", [{"max_verifications": 1}], indirect=True)
def test_a_bundle_check_is_a_verification_of_the_server(hidden, runs):
    with open(python_bundle(os.path.join(hidden.root, "walker.tar.gz")), "rb") as handle:
        data = handle.read()
    with hidden.client("alpha") as alpha:
        submission = alpha.post("/api/boards/office/submissions", json={"policy": "p"}).json()["id"]
    body = gzip.decompress(record_of(runs["alpha"][0], "greedy", 0))
    with stalled(hidden, "alpha", f"/api/submissions/{submission}/episodes/office-floor/0", body):
        wait_for(lambda: in_flight(hidden, "verify") == 1, what="the upload's verification")
        refused = post_bundle(hidden, "beta", data)
        assert (refused.status_code, refused.json()) == (
            503, {"error": "the server is verifying 1 records (the limit); try again shortly"}
        )  # fmt: skip
        assert in_flight(hidden, "bundle") == 0  # given back with the refusal
    wait_for(lambda: in_flight(hidden, "verify") == 0, what="the slot given back")
    assert post_bundle(hidden, "beta", data).status_code == 202
