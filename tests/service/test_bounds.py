"""A board's bounds (bounds.md §5) against a real ``ember service serve`` on 127.0.0.1, both databases."""

import os
import stat

import httpx

from ember.bounds import bounds_line
from ember.scenario import compile_scenario

from helpers.service import wait_for


def test_the_parent_computes_the_open_bounds_and_serves_them(service):
    server = service.serve()
    unknown = httpx.get(f"{server.url}/api/boards/nope/bounds.jsonl", timeout=30)
    assert unknown.status_code == 404
    assert type(unknown.json()["error"]) is str
    found = wait_for(
        lambda: (r := httpx.get(f"{server.url}/api/boards/office/bounds.jsonl", timeout=30)).status_code == 200 and r,
        what="the board's bounds",
    )
    scenario = compile_scenario("builtin:office")
    assert found.content == bounds_line(scenario, 0) + bounds_line(scenario, 1)
    assert found.headers["content-type"] == "application/x-ndjson"
    path = os.path.join(service.data, "derived", "office", "bounds.jsonl")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_missing_file_is_computed_again_at_the_next_start(service):
    server = service.serve()
    path = os.path.join(service.data, "derived", "office", "bounds.jsonl")
    wait_for(lambda: os.path.exists(path), what="the board's bounds")
    data = open(path, "rb").read()  # noqa: SIM115
    server.kill()
    os.unlink(path)
    server = service.serve()
    wait_for(lambda: os.path.exists(path), what="the bounds again")
    with open(path, "rb") as handle:
        assert handle.read() == data
