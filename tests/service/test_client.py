"""``ember submit`` (service.md §2): only missing episodes are sent, refusals named, exit codes, and what it
refuses to talk to (plain http:// beyond loopback, another major service version)."""

import gzip
import os
import subprocess
import sys

import httpx
import pytest

from helpers.service import ember, free_port, record_of, wait_for

FOREIGN = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
app = Starlette(routes=[Route("/api", lambda request: JSONResponse({"service_version": "2.0", "ember": "9"}))])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def folder_of(tmp_path, records):
    """A folder laid out like a records entry: {seed: bytes} of office-floor."""
    folder = tmp_path / "mine"
    (folder / "office-floor").mkdir(parents=True)
    for seed, data in records.items():
        (folder / "office-floor" / f"{seed}.record.gz").write_bytes(data)
    return folder


def submit(service, source, *more):
    token = service.token_file("alpha")
    return ember("submit", service.server.url, "office", "--token-file", token, "--policy", "p", source, *more,
                 check=False)  # fmt: skip


def test_only_missing_episodes_are_sent_and_refusals_are_named(service, runs, tmp_path):
    service.serve()
    results, _ = runs["alpha"]
    good = {seed: record_of(results, "greedy", seed) for seed in (0, 1)}
    partial = folder_of(tmp_path, {0: good[0]})
    first = submit(service, partial)
    assert first.returncode == 1
    assert "office-floor seed 1: refused: not sent: no submitted record" in first.stderr
    assert "is open: 1 uploaded now, 1 refused, 1 missing." in first.stdout
    # A tampered record for seed 1: the server's message is named.
    plain = gzip.decompress(good[1]).replace(b'"p00":"north"', b'"p00":"south"', 1)
    (partial / "office-floor" / "1.record.gz").write_bytes(gzip.compress(plain))
    second = submit(service, partial)
    assert second.returncode == 1 and "office-floor seed 1: refused: " in second.stderr
    assert "is open: 0 uploaded now, 1 refused, 1 missing." in second.stdout
    (partial / "office-floor" / "1.record.gz").write_bytes(good[1])
    third = submit(service, partial, "--no-close")
    assert third.returncode == 0 and "is open: 1 uploaded now, 0 missing." in third.stdout
    closed = submit(service, partial)
    assert closed.returncode == 0 and "is closed: 0 uploaded now, 0 missing." in closed.stdout
    with service.client("alpha") as alpha:
        status = alpha.get(f"/api/submissions/{closed.stdout.split()[3]}").json()
    assert status["state"] == "closed" and len(status["rows"]) == 2


@pytest.mark.parametrize("url", ["http://example.com", "http://10.0.0.1:8000", "ftp://127.0.0.1/"])
def test_plain_http_beyond_loopback_is_refused(tmp_path, url):
    token = tmp_path / "t"
    token.write_text("ember_" + "x" * 43 + "\n")
    done = ember("submit", url, "office", "--token-file", token, "--policy", "p", tmp_path, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "refused except to a loopback address" in done.stderr or "expected https://" in done.stderr


def test_another_major_service_version_is_refused(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", FOREIGN, str(port)])
    try:
        url = f"http://127.0.0.1:{port}"

        def answers():
            try:
                return httpx.get(url + "/api", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, what="the foreign server")
        token = tmp_path / "t"
        token.write_text("ember_" + "x" * 43 + "\n")
        os.makedirs(tmp_path / "src")
        done = ember("submit", url, "office", "--token-file", token, "--policy", "p", tmp_path / "src", check=False)
        assert done.returncode == 2 and "the service speaks version 2.0; this ember submit speaks 1.x" in done.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_bad_token_file_is_bad_input(tmp_path):
    token = tmp_path / "t"
    token.write_text("not a token\n")
    done = ember("submit", "http://127.0.0.1:9", "office", "--token-file", token, "--policy", "p", tmp_path,
                 check=False)  # fmt: skip
    assert done.returncode == 2 and "expected one token" in done.stderr


def test_submit_sends_a_description_and_a_link_with_a_new_submission(service, runs, tmp_path):
    service.serve()
    results, policy = runs["alpha"]
    token = service.token_file("alpha")
    about = ("--description", "Greedy to the nearest exit.", "--link", "https://example.org/greedy")
    done = ember("submit", service.server.url, "office", "--token-file", token, "--policy", policy, results, *about)
    assert "is closed: 2 uploaded now, 0 missing." in done.stdout
    listed = httpx.get(f"{service.server.url}/api/boards/office/submissions").json()
    assert [(item["policy"], item["description"], item["link"]) for item in listed] == [
        (policy, "Greedy to the nearest exit.", "https://example.org/greedy")
    ]
    shown = ember("submit", service.server.url, "office", "--token-file", token, "--status", done.stdout.split()[3])
    assert any(line.split() == ["link", "https://example.org/greedy"] for line in shown.stdout.splitlines())
    # Bad values: the service's refusal naming the field, exit 2, one line, nothing on stdout, no submission.
    for option, value, field in (("--description", "x" * 201, "$.description"), ("--link", "ftp://x", "$.link")):
        bad = ember("submit", service.server.url, "office", "--token-file", token, "--policy", "other",
                    os.path.join(results, "records", policy), option, value, check=False)  # fmt: skip
        assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1, bad.stderr
        assert f"board office: {field}: expected" in bad.stderr
    with service.client("alpha") as alpha:
        assert [item["policy"] for item in alpha.get("/api/boards/office/submissions").json()] == [policy]
    for words in (("--status", "x"), ("--agent", str(tmp_path))):
        mixed = ember("submit", service.server.url, "office", "--token-file", token, *words, "--link",
                      "https://example.org/", check=False)  # fmt: skip
        assert mixed.returncode == 2 and mixed.stdout == "" and "--link" in mixed.stderr, mixed.stderr
