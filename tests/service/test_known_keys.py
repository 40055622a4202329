"""Bounded cost for known keys (service.md §9): a re-upload to a key that has an accepted record is compared
with it as it streams and answered 409 as soon as it passes the accepted record's length or differs from it,
with the rest of its body never sent: a gzip bomb costs no more than the accepted record."""

import gzip
import json
import zlib

import pytest

from helpers.service import Service, raw_request, record_of

MiB = 1 << 20


@pytest.fixture
def accepted(tmp_path, database, runs):
    """A running service whose alpha submission holds alpha's record for office-floor seed 0:
    (service, submission id, the record's plain bytes, the accepted row)."""
    made = Service(str(tmp_path), database)
    made.serve()
    record = record_of(runs["alpha"][0], "greedy", 0)
    with made.client("alpha") as alpha:
        submission = alpha.post("/api/boards/office/submissions", json={"policy": "p"}).json()["id"]
        put = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=record)
    assert put.status_code == 201, put.text
    yield made, submission, gzip.decompress(record), put.json()
    made.close()


def bomb(prefix, padding_mib):
    """A gzip stream of ``prefix`` and then ``padding_mib`` MiB of newlines (about a thousandth of it sent)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(prefix)]
    block = b"\n" * MiB
    parts += [compressor.compress(block) for _ in range(padding_mib)]
    parts.append(compressor.flush())
    return b"".join(parts)


def send_part(service, submission, body, sent):
    """The answer to a re-upload of ``body`` of which only the first ``sent`` bytes are sent."""
    headers = [("Authorization", f"Bearer {service.tokens['alpha']}"), ("Content-Length", str(len(body)))]
    path = f"/api/submissions/{submission}/episodes/office-floor/0"
    return raw_request(service.server.port, "PUT", path, headers, [body[:sent], body[sent:]], pause_after=0)


def test_a_gzip_bomb_resent_to_an_accepted_key_is_409_before_its_body_is_sent(accepted):
    service, submission, plain, row = accepted
    body = bomb(plain, 1024)  # 1 GiB and the record, decompressed
    sent = len(body) // 4  # a quarter: the record and about 256 MiB of padding
    assert len(body) < 2 * MiB and zlib.decompressobj(31).decompress(body[:sent], len(plain) + 1)[: len(plain)] == plain
    status, headers, answer = send_part(service, submission, body, sent)
    assert status == 409, answer
    expected = f"another record (sha256 {row['record_sha256']}) is accepted for office-floor seed 0"
    assert json.loads(answer) == {"error": expected}
    assert headers["connection"] == "close"
    with service.client("alpha") as alpha:
        assert alpha.get(f"/api/submissions/{submission}").json()["rows"] == [row]


def test_another_record_resent_to_an_accepted_key_is_409_at_its_first_different_bytes(accepted, runs):
    service, submission, plain, row = accepted
    other = gzip.decompress(record_of(runs["beta"][0], "stay", 0))
    same = next(number for number, (a, b) in enumerate(zip(plain, other)) if a != b)
    assert same < len(other) // 2  # the first half differs from the accepted record
    status, headers, answer = send_part(service, submission, other, len(other) // 2)
    assert status == 409 and b"another record" in answer, answer
    # The accepted record itself, plain or gzip, is still 200 with its row.
    for body in (plain, gzip.compress(plain)):
        with service.client("alpha") as alpha:
            again = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=body)
        assert (again.status_code, again.json()) == (200, row)


def test_the_accepted_record_and_a_little_more_is_409(accepted):
    service, submission, plain, row = accepted
    for body in (plain + b"\n", plain[:-1]):
        with service.client("alpha") as alpha:
            answer = alpha.put(f"/api/submissions/{submission}/episodes/office-floor/0", content=body)
        assert answer.status_code == 409 and "another record" in answer.json()["error"], answer.text
