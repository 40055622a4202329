"""Bad input to the service (service.md §3): each a JSON error, the server alive, nothing stored.

One server per backend for the module; every test checks afterwards that the
server still answers and that no row and no file (temporary or stored) was
kept.  Attacks go through real HTTP on 127.0.0.1 (hand-written requests where
a client library would tidy the path or the body).
"""

import gzip
import json
import socket

import httpx
import pytest

import ember

from helpers.service import Service, raw_request, record_of

LIMITS = {"max_record_bytes": 200_000, "body_window_s": 2, "body_window_bytes": 30_720, "header_timeout_s": 2}
PLAIN_LIMIT = 200_000


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def board(request, tmp_path_factory):
    database = None if request.param == "sqlite" else request.getfixturevalue("postgres").database()
    made = Service(str(tmp_path_factory.mktemp("bad-input")), database, LIMITS)
    made.serve()
    with made.client("alpha") as alpha:
        made.submission = alpha.post("/api/boards/office/submissions", json={"policy": "p"}).json()["id"]
    yield made
    made.close()


@pytest.fixture
def clean(board):
    """After the test: the server alive, no row in the submission, nothing in the record store."""
    yield board
    assert board.server.alive()
    with board.client("alpha") as alpha:
        status = alpha.get(f"/api/submissions/{board.submission}").json()
    assert status["rows"] == [] and status["state"] == "open"
    assert board.stored_files() == []


def put(board, path_tail, body, team="alpha", headers=()):
    return raw_request(
        board.server.port, "PUT", f"/api/submissions/{board.submission}/episodes/{path_tail}",
        [("Authorization", f"Bearer {board.tokens[team]}"), ("Content-Length", str(len(body))), *headers], [body],
    )  # fmt: skip


def json_error(status_headers_body, status):
    code, headers, body = status_headers_body
    assert code == status, (code, body)
    assert headers["content-type"] == "application/json"
    value = json.loads(body)
    assert set(value) >= {"error"} and isinstance(value["error"], str) and "\n" not in value["error"]
    return value["error"], headers


@pytest.fixture(scope="module")
def records(runs):
    greedy, _ = runs["alpha"]
    plain = gzip.decompress(record_of(greedy, "greedy", 0))
    return {"gz0": record_of(greedy, "greedy", 0), "gz1": record_of(greedy, "greedy", 1), "plain0": plain}


def test_a_tampered_record_is_422_with_the_engines_message_and_connection_close(clean, records):
    lines = records["plain0"].split(b"\n")
    lines[3] = lines[3].replace(b'"p00":"north"', b'"p00":"south"', 1)
    assert lines[3] != records["plain0"].split(b"\n")[3]
    message, headers = json_error(put(clean, "office-floor/0", b"\n".join(lines)), 422)
    assert message.startswith("$.steps[") or message.startswith("record failed simulator replay verification")
    assert headers["connection"] == "close"
    with clean.client("alpha") as alpha:
        refusals = alpha.get(f"/api/submissions/{clean.submission}").json()["refusals"]
    assert refusals == [{"scenario_id": "office-floor", "seed": 0, "error": message}]


def test_a_header_whose_seed_or_scenario_disagrees_with_the_path(clean, records, tmp_path):
    message, _ = json_error(put(clean, "office-floor/0", records["gz1"]), 422)
    assert message == "$.header.seed: expected seed 0, the record's header names seed 1."
    other = tmp_path / "small.record"
    ember.run_episode(ember.load_scenario("builtin:small-room"), "greedy", 0, str(other))
    message, _ = json_error(put(clean, "office-floor/0", other.read_bytes()), 422)
    assert "scenario" in message


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_decompression_bomb_is_refused(clean, kind):
    expanding = b'{"header":' + b" " * (64 << 20)
    if kind == "gzip":
        bomb = gzip.compress(expanding, 9)
    else:
        import zstandard

        bomb = zstandard.ZstdCompressor(level=19).compress(expanding)
    assert len(bomb) < 100_000
    message, _ = json_error(put(clean, "office-floor/0", bomb), 422)
    assert message.startswith("$")


def test_a_stalling_body_is_408(clean, records):
    body = records["plain0"]
    answer = raw_request(
        clean.server.port, "PUT", f"/api/submissions/{clean.submission}/episodes/office-floor/0",
        [("Authorization", f"Bearer {clean.tokens['alpha']}"), ("Content-Length", str(len(body)))],
        [body[:1000], body[1000:]], pause_after=0,
    )  # fmt: skip
    message, headers = json_error(answer, 408)
    assert "in 2 s" in message and headers["connection"] == "close"


def test_an_over_long_body_is_413_by_its_length_or_by_its_bytes(clean, records):
    too_long = b" " * (PLAIN_LIMIT + 1)
    message, _ = json_error(put(clean, "office-floor/0", too_long), 413)
    assert f"{PLAIN_LIMIT:,}" in message
    # Chunked (no Content-Length): the limit counts the bytes as they come; leading whitespace keeps it valid so far.
    body = b" " * (PLAIN_LIMIT - 50_000) + records["plain0"]
    chunks = [
        f"{len(body[i : i + 8192]):x}\r\n".encode() + body[i : i + 8192] + b"\r\n" for i in range(0, len(body), 8192)
    ]
    answer = raw_request(
        clean.server.port, "PUT", f"/api/submissions/{clean.submission}/episodes/office-floor/0",
        [("Authorization", f"Bearer {clean.tokens['alpha']}"), ("Transfer-Encoding", "chunked")],
        [*chunks, b"0\r\n\r\n"],
    )  # fmt: skip
    json_error(answer, 413)


def test_bad_json_and_bad_policy_names(clean):
    with clean.client("alpha") as alpha:
        for body in (b"{not json", b"\xff\xfe"):
            response = alpha.post("/api/boards/office/submissions", content=body)
            assert response.status_code == 400 and response.json()["error"].startswith("the body is not JSON")
        for value in ([], {"policy": 5}, {"policy": "p", "extra": 1}, {}):
            response = alpha.post("/api/boards/office/submissions", json=value)
            assert response.status_code == 422, value
        for name in ("../x", "a b", "", ".hidden", "-x", "x" * 60, "p/q", "é"):
            response = alpha.post("/api/boards/office/submissions", json={"policy": name})
            assert response.status_code == 422 and response.json()["error"].startswith("$.policy"), name
        listed = alpha.get("/api/boards/office/submissions").json()
    assert [s["policy"] for s in listed] == ["p"]


def test_unknown_board_scenario_seed_and_id_are_404(clean, records):
    with clean.client("alpha") as alpha:
        assert alpha.post("/api/boards/nowhere/submissions", json={"policy": "p"}).status_code == 404
        assert alpha.get("/api/submissions/4b6f1c1e-0000-4000-8000-000000000000").status_code == 404
        assert alpha.get("/api/submissions/not-a-uuid").status_code == 404
    for tail in ("lab/0", "office-floor/2", "office-floor/01", "office-floor/-1", "office-floor/1e3", "office-floor/x"):
        message, _ = json_error(put(clean, tail, records["gz0"]), 404)
    assert httpx.get(f"{clean.server.url}/api/boards/nowhere").status_code == 404
    assert httpx.get(f"{clean.server.url}/api/boards/office/scenarios/lab.json").status_code == 404
    assert httpx.get(f"{clean.server.url}/api/records/{'0' * 64}").status_code == 404


TRAVERSALS = [
    ("GET", "/api/boards/..%2F..%2Fservice.toml"),
    ("GET", "/api/boards/../service.toml"),
    ("GET", "/api/boards/%2e%2e/ranking.json"),
    ("GET", "/api/boards/office/scenarios/..%2F..%2Fservice.toml"),
    ("GET", "/api/boards/office/scenarios/%2e%2e%2fservice.toml.json"),
    ("GET", "/api/boards/office/hidden/..%2F..%2Fservice.toml"),
    ("GET", "/api/records/..%2F..%2Fservice.toml"),
    ("GET", "/api/records/..%2Fember.db"),
    ("GET", "/api/submissions/..%2F..%2Fservice.toml"),
    ("PUT", "/api/submissions/..%2F..%2Fx/episodes/office-floor/0"),
    ("PUT", "/api/submissions/{id}/episodes/..%2F..%2Fservice.toml/0"),
    ("PUT", "/api/submissions/{id}/episodes/office-floor/..%2F0"),
    ("PUT", "/api/submissions/{id}/episodes/office-floor/0%2F..%2F..%2Fx"),
    ("PUT", "/api/submissions/{id}/episodes/%2e%2e/0"),
]


@pytest.mark.parametrize(("method", "path"), TRAVERSALS)
def test_path_traversal_in_every_segment_is_a_json_404(clean, records, method, path):
    body = records["gz0"] if method == "PUT" else b""
    answer = raw_request(
        clean.server.port, method, path.replace("{id}", clean.submission),
        [("Authorization", f"Bearer {clean.tokens['alpha']}"), ("Content-Length", str(len(body)))], [body],
    )  # fmt: skip
    message, _ = json_error(answer, 404)
    assert "ember_" not in message and "[limits]" not in message


def test_tokens_missing_unknown_or_of_another_team(clean, records):
    url = f"{clean.server.url}/api/submissions/{clean.submission}"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer ember_" + "x" * 43}).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Basic YWxwaGE6eA=="}).status_code == 401
    with clean.client("beta") as beta:
        assert beta.get(url).status_code == 403
        assert beta.post(url + "/close").status_code == 403
        assert beta.post(url + "/withdraw").status_code == 403
    message, _ = json_error(put(clean, "office-floor/0", records["gz0"], team="beta"), 403)
    assert message == "this submission belongs to another team"
    assert httpx.post(f"{clean.server.url}/api/boards/office/submissions", json={"policy": "q"}).status_code == 401


def test_unknown_paths_and_methods_answer_json(clean):
    for method, path, status in (("GET", "/nothing", 404), ("DELETE", "/api/boards/office", 405)):
        answer = raw_request(clean.server.port, method, path)
        json_error(answer, status)


def test_headers_sent_too_slowly_end_the_connection(clean):
    with socket.create_connection(("127.0.0.1", clean.server.port), timeout=60) as sock:
        sock.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n")
        closed = False
        for _ in range(30):  # a header byte a second: each byte would reset a keep-alive timer
            try:
                sock.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sock.settimeout(1)
            try:
                if sock.recv(1) == b"":
                    closed = True
                    break
            except ConnectionResetError:  # the server may reset rather than close: both end it
                closed = True
                break
            except TimeoutError:
                continue
    assert closed


def test_headers_longer_than_16_kib_are_a_json_400(clean):
    answer = raw_request(clean.server.port, "GET", "/api", [("X-Padding", "x" * (17 * 1024))])
    message, headers = json_error(answer, 400)
    assert "16,384 bytes" in message and headers["connection"] == "close"
