"""The log is anchored (service.md §9): the service's Ed25519 key pair, ``GET /api``'s public key, the signed
head of ``GET /api/boards/{board}/log/head`` and of every export, and ``ember verify --log --public-key /
--service``, which refuses a re-chained forgery that the hash chain alone lets through."""

import base64
import json
import os
import re
import shutil
import sqlite3
import stat

import httpx
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ember.canonical import canonical_json_reference
from ember.results.log import GENESIS, LOG_KEYS, entry_line
from ember.service.export import derived_numbers

from helpers.service import Service, ember

AT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"


def public_key_of(data):
    with open(os.path.join(data, "signing.pub"), encoding="ascii") as handle:
        return handle.read().strip()


def assert_signed(head, key):
    """The head's signature verifies with K over the canonical JSON of {"at", "board", "hash", "seq"}."""
    signed = canonical_json_reference({name: head[name] for name in ("at", "board", "hash", "seq")})
    Ed25519PublicKey.from_public_bytes(base64.b64decode(key)).verify(base64.b64decode(head["signature"]), signed)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def submit(service, runs, team):
    results, policy = runs[team]
    ember("submit", service.server.url, "office", "--token-file", service.token_file(team), "--policy", policy,
          results)  # fmt: skip


def export(service, path):
    ember("service", "export", service.data, "office", "-o", path)
    return path


def verify(export_dir, *more):
    return ember("verify", export_dir, "--log", os.path.join(export_dir, "log.jsonl"), *more, check=False)


def forge_without(export_dir, team, cut_only=False):
    """Take ``team`` out of an export and compute everything again that the hash chain and ``verify`` check:
    the log's chain (seq, prev, hash), the rows, campaign.json's policies, the records, ranking and statistics.
    ``cut_only``: the team's entries must be the log's last ones (a truncated export)."""
    log = os.path.join(export_dir, "log.jsonl")
    entries = [json.loads(line) for line in read(log).splitlines()]
    kept = [entry for entry in entries if entry["team"] != team]
    if cut_only:
        assert kept == entries[: len(kept)]
    lines, prev = [], GENESIS
    for number, entry in enumerate(kept, 1):
        line, prev = entry_line({**{key: entry[key] for key in LOG_KEYS}, "seq": number, "prev": prev})
        lines.append(line + b"\n")
    write(log, b"".join(lines))
    episodes = os.path.join(export_dir, "episodes.jsonl")
    rows = [
        line
        for line in read(episodes).splitlines(keepends=True)
        if not json.loads(line)["policy"].startswith(f"{team}.")
    ]
    write(episodes, b"".join(rows))
    campaign_path = os.path.join(export_dir, "campaign.json")
    campaign = json.loads(read(campaign_path))
    campaign["policies"] = [p for p in campaign["policies"] if not p["name"].startswith(f"{team}.")]
    write(campaign_path, canonical_json_reference(campaign) + b"\n")
    for name in os.listdir(os.path.join(export_dir, "records")):
        if name.startswith(f"{team}."):
            shutil.rmtree(os.path.join(export_dir, "records", name))
    ranking, statistics = derived_numbers(export_dir, 1000)
    write(os.path.join(export_dir, "ranking.json"), ranking)
    write(os.path.join(export_dir, "statistics.json"), statistics)
    return [json.loads(line) for line in lines]


@pytest.fixture
def served(tmp_path, runs):
    """A SQLite service with alpha's and beta's submissions closed on board office."""
    made = Service(str(tmp_path))
    made.serve()
    for team in ("alpha", "beta"):
        submit(made, runs, team)
    yield made
    made.close()


def policies_of_rows(export_dir):
    return sorted(
        {json.loads(line)["policy"] for line in read(os.path.join(export_dir, "episodes.jsonl")).splitlines()}
    )


def test_init_makes_the_key_pair_once_and_on_a_data_made_before_1_1_only_that(tmp_path):
    data = str(tmp_path / "DATA")
    made = ember("service", "init", data)
    key_file = os.path.join(data, "signing.key")
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.join(data, "signing.pub")).st_mode) == 0o600
    private = read(key_file)
    assert private.startswith(b"-----BEGIN PRIVATE KEY-----\n")
    key = public_key_of(data)
    assert len(base64.b64decode(key, validate=True)) == 32 and len(key) == 44
    assert made.stdout == "" and f"the log's public key, in signing.pub: {key})." in made.stderr
    # Again on a 1.1 DATA: nothing changes, the key pair above all.
    ember("service", "init", data)
    assert read(key_file) == private and public_key_of(data) == key
    # A DATA made before 1.1 has no key pair: serve refuses it, init makes one and changes nothing else.
    os.unlink(key_file)
    os.unlink(os.path.join(data, "signing.pub"))
    refused = ember("service", "serve", data, "--port", "9", check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "signing.key: missing" in refused.stderr.splitlines()[-1] and "ember service init" in refused.stderr
    before = {name: read(os.path.join(data, name)) for name in ("service.toml", "ember.db")}
    ember("service", "init", data)
    assert {name: read(os.path.join(data, name)) for name in before} == before
    assert sorted(os.listdir(data)) == ["ember.db", "records", "service.toml", "signing.key", "signing.pub"]
    assert read(key_file) != private and stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_api_names_the_public_key_and_the_head_is_signed(service, runs):
    server = service.serve()
    answer = httpx.get(f"{server.url}/api").json()
    assert set(answer) == {"service_version", "ember", "public_key"}
    assert answer["service_version"] == "1.1" and answer["public_key"] == public_key_of(service.data)
    # ember submit speaks 1.x: it still talks to a 1.1 service.
    submit(service, runs, "alpha")
    response = httpx.get(f"{server.url}/api/boards/office/log/head")
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"
    head = response.json()
    assert set(head) == {"at", "board", "hash", "seq", "signature"}
    assert response.content == canonical_json_reference(head) + b"\n"  # the form of an export's log.head.json
    last = json.loads(httpx.get(f"{server.url}/api/boards/office/log").content.splitlines()[-1])
    assert (head["board"], head["seq"], head["hash"]) == ("office", 4, last["hash"])
    assert type(head["seq"]) is int and last["seq"] == 4
    assert re.fullmatch(AT, head["at"]) and head["at"] >= last["at"]
    assert len(base64.b64decode(head["signature"], validate=True)) == 64
    assert_signed(head, answer["public_key"])
    with pytest.raises(InvalidSignature):
        assert_signed({**head, "seq": 3}, answer["public_key"])
    # The time is the answer's: a later head is signed again.
    again = httpx.get(f"{server.url}/api/boards/office/log/head").json()
    assert again["at"] > head["at"] and again["seq"] == 4
    missing = httpx.get(f"{server.url}/api/boards/nowhere/log/head")
    assert missing.status_code == 404 and set(missing.json()) == {"error"}


def test_a_team_removed_and_the_chain_recomputed_is_caught_with_the_public_key(served, tmp_path):
    key = public_key_of(served.data)
    genuine = export(served, str(tmp_path / "genuine"))
    head = json.loads(read(os.path.join(genuine, "log.head.json")))
    assert read(os.path.join(genuine, "log.head.json")) == canonical_json_reference(head) + b"\n"
    assert_signed(head, key)
    # The genuine export: exit 0, the head's time printed (K given as the value and as @FILE).
    for argument in (key, "@" + os.path.join(served.data, "signing.pub")):
        done = verify(genuine, "--public-key", argument)
        assert done.returncode == 0, done.stdout
        assert f"ember verify: the log's head is signed: seq 7 at {head['at']}\n" in done.stdout
        assert "the log holds" in done.stdout
    # The forgery: beta taken out, the chain computed again. The chain alone passes it...
    forged = str(tmp_path / "forged")
    shutil.copytree(genuine, forged)
    forge_without(forged, "beta")
    assert policies_of_rows(forged) == ["alpha.greedy"]
    plain = verify(forged)
    assert plain.returncode == 0 and "the log holds" in plain.stdout, plain.stdout
    # ...the signed head does not: it names the genuine chain's last entry.
    done = verify(forged, "--public-key", key)
    assert done.returncode == 1 and "the log fails" in done.stdout
    found = [line for line in done.stdout.splitlines() if "log.head.json" in line]
    assert len(found) == 1 and "the chain ends at entry 4" in found[0] and "the signed head says 7" in found[0]
    assert "is signed" not in done.stdout
    # A forger who also points the head at the new chain cannot sign it.
    entries = [json.loads(line) for line in read(os.path.join(forged, "log.jsonl")).splitlines()]
    moved = {**head, "seq": entries[-1]["seq"], "hash": entries[-1]["hash"]}
    write(os.path.join(forged, "log.head.json"), canonical_json_reference(moved) + b"\n")
    done = verify(forged, "--public-key", key)
    assert done.returncode == 1 and "the signature does not verify with the public key" in done.stdout
    # Nor sign it with a key of their own: it is not the service's.
    mine = Ed25519PrivateKey.generate()
    signed = canonical_json_reference({name: moved[name] for name in ("at", "board", "hash", "seq")})
    resigned = {**moved, "signature": base64.b64encode(mine.sign(signed)).decode("ascii")}
    write(os.path.join(forged, "log.head.json"), canonical_json_reference(resigned) + b"\n")
    done = verify(forged, "--public-key", key)
    assert done.returncode == 1 and "the signature does not verify with the public key" in done.stdout
    # A wrong key refuses even the genuine export; a missing or re-encoded head is refused.
    other = base64.b64encode(bytes(32)).decode("ascii")
    done = verify(genuine, "--public-key", other)
    assert done.returncode == 1 and f"does not verify with the public key {other}" in done.stdout
    write(os.path.join(forged, "log.head.json"), json.dumps(head, indent=1).encode() + b"\n")
    done = verify(forged, "--public-key", key)
    assert done.returncode == 1 and "re-encoded" in done.stdout
    os.unlink(os.path.join(forged, "log.head.json"))
    done = verify(forged, "--public-key", key)
    assert done.returncode == 1 and "log.head.json: missing" in done.stdout


def test_against_the_service_a_truncated_or_old_export_shows_the_newer_live_head(served, runs, tmp_path):
    url = served.server.url
    old = export(served, str(tmp_path / "old"))
    old_head = json.loads(read(os.path.join(old, "log.head.json")))
    submit(served, runs, "gamma")
    new = export(served, str(tmp_path / "new"))
    # The current export against the service: its head is the live head.
    done = verify(new, "--service", url)
    assert done.returncode == 0 and "its head is this export's head" in done.stdout, done.stdout
    # An old export is genuine and signed: it says how old its head is and that the live one is newer.
    done = verify(old, "--service", url, "--public-key", public_key_of(served.data))
    assert done.returncode == 0, done.stdout
    assert f"the log's head is signed: seq 7 at {old_head['at']}" in done.stdout
    assert "the live head is newer: seq 10 at " in done.stdout and "(3 entries after this export's head" in done.stdout
    # A truncated export (gamma cut off the end) passes the chain but not the head, offline or against the service.
    truncated = str(tmp_path / "truncated")
    shutil.copytree(new, truncated)
    forge_without(truncated, "gamma", cut_only=True)
    assert verify(truncated).returncode == 0
    for more in (("--public-key", public_key_of(served.data)), ("--service", url)):
        done = verify(truncated, *more)
        assert done.returncode == 1 and "the chain ends at entry 7" in done.stdout, done.stdout
    # The truncated log under the old head is the old export: it verifies, and the live head is newer.
    shutil.copyfile(os.path.join(old, "log.head.json"), os.path.join(truncated, "log.head.json"))
    done = verify(truncated, "--service", url)
    assert done.returncode == 0 and "the live head is newer: seq 10" in done.stdout, done.stdout


def test_the_live_log_must_hold_the_export_unchanged(served, tmp_path):
    genuine = export(served, str(tmp_path / "genuine"))
    served.server.stop()
    # The service's own history rewritten (an entry's bytes changed in its database): the export no longer matches.
    with sqlite3.connect(os.path.join(served.data, "ember.db")) as connection:
        entry = connection.execute("SELECT entry FROM log WHERE seq = 2").fetchone()[0]
        connection.execute("UPDATE log SET entry = ? WHERE seq = 2", (bytes(entry).replace(b'"at":"', b'"at":"1'),))
    served.serve()
    done = verify(genuine, "--service", served.server.url)
    assert done.returncode == 1 and "the live log's entry 2 differs from this export's" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("not-base64!", "expected the base64 (RFC 4648, padded: 44 characters) of a 32-byte Ed25519 public key"),
        (base64.b64encode(bytes(31)).decode(), "got 31 bytes"),
        (base64.b64encode(bytes(32)).decode().rstrip("="), "44 characters"),
        ("@/nonexistent/key.pub", "--public-key @/nonexistent/key.pub: cannot read the key file"),
    ],
)
def test_a_bad_key_argument_is_bad_input(tmp_path, argument, message):
    results = tmp_path / "R"
    results.mkdir()
    done = ember("verify", results, "--log", results / "log.jsonl", "--public-key", argument, check=False)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


@pytest.mark.parametrize(
    "option", [("--public-key", base64.b64encode(bytes(32)).decode()), ("--service", "http://127.0.0.1:9")]
)
def test_a_key_or_service_without_a_log_is_bad_input(tmp_path, option):
    done = ember("verify", tmp_path, *option, check=False)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert "give --log LOG too" in done.stderr
