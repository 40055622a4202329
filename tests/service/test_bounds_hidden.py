"""The hidden track's bounds (bounds.md §5, service.md §9) against a real ``ember service serve``, both databases.

A hidden set's bounds name its secret seeds' fires, so before the reveal
no answer, page or file under DATA holds one (the export an operator
writes of the live set holds its own, computed there); after it
``GET …/hidden/live/bounds.jsonl`` and ``…/hidden/final/bounds.jsonl``
serve the files the serve parent computed, and each export of
``--track live|final|hidden`` holds its set's, which ``ember verify``
checks.  Real jobs run a real bundle in the sandbox.
"""

import os

import httpx
import pytest

from ember.bounds import bounds_line
from ember.results import OkRows, read_results
from ember.results.bounds_file import read_bounds
from ember.results.distance import Distances
from ember.scenario import compile_scenario

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService
from helpers.service import ember, wait_for

SETS_CAMPAIGN = """campaign = "hidden"
scenarios = [
  { source = "builtin:small-room", seeds = { live = 1, final = 1 } },
  { source = "builtin:office", seeds = { live = 0, final = 1 } },
]
"""
SOURCES = {"small-room": "builtin:small-room", "office-floor": "builtin:office"}
ORDER = ["small-room", "office-floor"]  # the hidden scenarios' board order


@pytest.fixture
def hidden(database):
    made = HiddenService(teams=("alpha",), hidden_text=SETS_CAMPAIGN, database=database)
    yield made
    made.close()


def set_bounds(keys, chosen):
    """The ``bounds.jsonl`` bytes of a hidden set, from the revealed keys: scenarios in board order, seeds
    ascending."""
    seeds = sorted((ORDER.index(k[0]), k[2], k[0]) for k in keys if k[3] == chosen)
    return b"".join(bounds_line(compile_scenario(SOURCES[sid]), seed) for _, seed, sid in seeds)


def bounds_files(data):
    found = []
    for folder, _, files in os.walk(data):
        found += [os.path.relpath(os.path.join(folder, f), data) for f in files if f.startswith("bounds.jsonl")]
    return sorted(found)


def get_when(url, ok=lambda answer: True, what="the answer"):
    def ready():
        answer = httpx.get(url, timeout=30)
        return answer if answer.status_code == 200 and ok(answer) else None

    return wait_for(ready, timeout=300, what=what)


def readable(hidden, job_ids):
    """Everything anyone (and team alpha, about its jobs) can read of the board: {path: answer}."""
    base = "/api/boards/office"
    paths = [
        "/", "/boards/office", base, f"{base}/log", f"{base}/submissions", f"{base}/bounds.jsonl",
        *(f"{base}/hidden/{s}{f}" for s in ("", "live/", "final/")
          for f in ("ranking.json", "statistics.json", "episodes.jsonl", "bounds.jsonl")),
        *(f"/api/jobs/{job}" for job in job_ids),
    ]  # fmt: skip
    with hidden.client("alpha") as client:
        return {path: client.get(path) for path in paths}


def test_hidden_bounds_are_served_after_the_reveal_and_nothing_of_them_before(hidden):
    keys = hidden.secret()["keys"]
    live, final = set_bounds(keys, "live"), set_bounds(keys, "final")
    assert len(live.splitlines()) == 1 and len(final.splitlines()) == 2
    server = hidden.serve()
    job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "walker.tar.gz")))
    assert hidden.wait_job("alpha", job)["state"] == "done"
    # A board added after office: once its bounds are there, a whole round of the bounds loop went past office.
    later = hidden.write("zzz.toml", 'campaign = "zzz"\nseeds = [0]\nscenarios = ["builtin:small-room"]\n')
    ember("service", "board", "add", hidden.data, "zzz", "--campaign", later)
    get_when(f"{server.url}/api/boards/zzz/bounds.jsonl", what="zzz's bounds")
    version = httpx.get(f"{server.url}/api/boards/office").json()["version"]
    get_when(
        f"{server.url}/boards/office", lambda a: a.headers["ember-board-version"] == str(version), "the page"
    )  # fmt: skip

    before = readable(hidden, [job])
    base = "/api/boards/office"
    assert before[f"{base}/hidden/live/ranking.json"].status_code == 200  # the live track is ranked
    for chosen in ("", "live/", "final/"):
        answer = before[f"{base}/hidden/{chosen}bounds.jsonl"]
        assert answer.status_code == 404 and type(answer.json()["error"]) is str, chosen
    lines = (live + final).splitlines()
    for path, answer in before.items():
        assert not any(line in answer.content for line in lines), path
        if path != f"{base}/bounds.jsonl":
            assert b"evacuated_max" not in answer.content, path
    assert "evacuated of possible" not in before["/boards/office"].text  # no distance on the live track
    assert bounds_files(hidden.data) == ["derived/office/bounds.jsonl", "derived/zzz/bounds.jsonl"]

    # The operator's export of the live set holds its bounds, computed by the export alone.
    early = os.path.join(hidden.root, "export-live-early")
    ember("service", "export", hidden.data, "office", "-o", early, "--track", "live")
    with open(os.path.join(early, "bounds.jsonl"), "rb") as handle:
        assert handle.read() == live
    assert bounds_files(hidden.data) == ["derived/office/bounds.jsonl", "derived/zzz/bounds.jsonl"]

    ember("service", "board", "reveal", hidden.data, "office")
    revealed = get_when(
        f"{server.url}{base}", lambda a: a.json()["hidden"]["revealed"] is not None, "the reveal"
    ).json()  # fmt: skip
    served = {}
    for chosen, expected in (("live", live), ("final", final)):
        served[chosen] = get_when(f"{server.url}{base}/hidden/{chosen}/bounds.jsonl", what=f"{chosen} bounds")
        assert served[chosen].content == expected
        assert served[chosen].headers["content-type"] == "application/x-ndjson"
    assert httpx.get(f"{server.url}{base}/hidden/bounds.jsonl").status_code == 404  # a set is live or final
    assert httpx.get(f"{server.url}{base}/hidden/other/bounds.jsonl").status_code == 404

    for track, expected in (("live", live), ("final", final), ("hidden", final)):
        export = os.path.join(hidden.root, f"export-{track}")
        ember("service", "export", hidden.data, "office", "-o", export, "--track", track)
        with open(os.path.join(export, "bounds.jsonl"), "rb") as handle:
            assert handle.read() == expected, track
        verified = ember("verify", export, "--log", os.path.join(export, "log.jsonl"), check=False)
        assert verified.returncode == 0, (track, verified.stdout + verified.stderr)

    # After the reveal the page shows the hidden sets' distance too.
    ok_rows = OkRows()
    results = read_results(os.path.join(hidden.root, "export-final"), consumers=(ok_rows,))
    distance = Distances(ok_rows, read_bounds(results.directory, results.campaign)).policy["alpha.walker"]
    page = get_when(
        f"{server.url}/boards/office",
        lambda a: a.headers["ember-board-version"] == str(revealed["version"]) and "evacuated of possible" in a.text,
        "the page with the hidden distance",
    ).text  # fmt: skip
    assert distance.evacuated_text() in page
