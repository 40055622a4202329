"""A board's bounds (bounds.md §5) against a real ``ember service serve`` on 127.0.0.1, both databases.

The serve parent computes ``bounds.jsonl`` of the open keys in a child
process and serves it; the board page shows the distance to the possible
once it exists (the page of the same board version is made again: no new
upload needed); every export holds its keys' bounds and ``ember verify``
checks them.  Without OR-Tools in the served process (a ``sitecustomize``
on PYTHONPATH that makes it unimportable: a real process, nothing of EMBER
replaced) serve says so in one line and answers 404.  A serve parent
SIGKILLed while a board's bounds are computed leaves no file, and its
child goes with it; the next start computes the file.
"""

import os
import signal
import stat

import httpx

from ember.bounds import bounds_line
from ember.results import OkRows, read_results
from ember.results.bounds_file import read_bounds
from ember.results.distance import Distances
from ember.scenario import compile_scenario

from helpers.service import Server, ember, wait_for

#: Makes OR-Tools unimportable in every process that starts with this folder on PYTHONPATH.
BLOCKER = """
import sys


class _NoOrTools:
    def find_spec(self, name, path=None, target=None):
        if name == "ortools" or name.startswith("ortools."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked for this test)", name=name)
        return None


sys.meta_path.insert(0, _NoOrTools())
"""
SLOW_SCENARIO = "builtin:ember-v1/medium-office-casualty"
SLOW_SEEDS = [0, 1, 2]


def without_ortools(root):
    """The environment of a process in which ``import ortools`` fails."""
    folder = os.path.join(root, "no-ortools")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(BLOCKER)
    return {"PYTHONPATH": os.pathsep.join([folder, *filter(None, [os.environ.get("PYTHONPATH")])])}


def office_bounds():
    scenario = compile_scenario("builtin:office")
    return bounds_line(scenario, 0) + bounds_line(scenario, 1)


def bounds_files(data):
    """Every ``bounds.jsonl`` (or temporary one) under DATA, relative to it."""
    found = []
    for folder, _, files in os.walk(data):
        found += [os.path.relpath(os.path.join(folder, f), data) for f in files if f.startswith("bounds.jsonl")]
    return sorted(found)


def served_bounds(server, board="office"):
    def ready():
        answer = httpx.get(f"{server.url}/api/boards/{board}/bounds.jsonl", timeout=30)
        return answer if answer.status_code == 200 else None

    try:
        return wait_for(ready, timeout=180, what=f"board {board}'s bounds")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the server's log ends: {server.read_log()[-4000:]}") from None


def test_the_parent_computes_the_open_bounds_and_serves_them(service):
    server = service.serve()
    unknown = httpx.get(f"{server.url}/api/boards/nope/bounds.jsonl", timeout=30)
    assert unknown.status_code == 404
    assert type(unknown.json()["error"]) is str
    assert unknown.headers["access-control-allow-origin"] == "*"
    found = served_bounds(server)
    assert found.content == office_bounds()
    assert found.headers["content-type"] == "application/x-ndjson"
    assert found.headers["access-control-allow-origin"] == "*"
    path = os.path.join(service.data, "derived", "office", "bounds.jsonl")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert bounds_files(service.data) == ["derived/office/bounds.jsonl"]
    # A board added while serve runs: computed by the running parent.
    added = os.path.join(service.root, "second.toml")
    with open(added, "w", encoding="utf-8") as handle:
        handle.write('campaign = "second"\nseeds = [3]\nscenarios = ["builtin:small-room"]\n')
    ember("service", "board", "add", service.data, "second", "--campaign", added)
    assert served_bounds(server, "second").content == bounds_line(compile_scenario("builtin:small-room"), 3)


def test_a_missing_file_is_computed_again_at_the_next_start(service):
    server = service.serve()
    path = os.path.join(service.data, "derived", "office", "bounds.jsonl")
    data = served_bounds(server).content
    server.kill()
    os.unlink(path)
    server = service.serve()
    assert served_bounds(server).content == data


def test_the_page_shows_the_distance_once_bounds_exist_and_every_export_holds_them(service, runs, tmp_path):
    root = str(tmp_path)
    blocked = without_ortools(root)
    # A board made before bounds existed: served first where OR-Tools cannot be imported.
    server = Server(service.data, env=blocked)
    service.server = server
    results, policy = runs["alpha"]
    ember("submit", server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy, results)
    version = httpx.get(f"{server.url}/api/boards/office", timeout=30).json()["version"]

    def page_at(url, version):
        answer = httpx.get(f"{url}/boards/office", timeout=30)
        return answer if answer.headers.get("ember-board-version") == str(version) else None

    page = wait_for(lambda: page_at(server.url, version), what="the page").text
    said = [line for line in server.read_log().splitlines() if "bounds" in line]
    assert len(said) == 1 and "no board's bounds are computed" in said[0] and "ember-eval[bounds]" in said[0], said
    missing = httpx.get(f"{server.url}/api/boards/office/bounds.jsonl", timeout=30)
    assert missing.status_code == 404 and "not computed yet" in missing.json()["error"]
    assert "evacuated of possible" not in page and "distance-note" not in page
    assert bounds_files(service.data) == []

    # An export where nothing computed the bounds and OR-Tools is missing: refused before anything is written.
    refused = ember("service", "export", service.data, "office", "-o", os.path.join(root, "r0"), env=blocked,
                    check=False)  # fmt: skip
    assert refused.returncode == 2 and refused.stdout == "", refused
    assert "ember-eval[bounds]" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not os.path.exists(os.path.join(root, "r0"))
    # With OR-Tools the export computes them itself, synchronously (and keeps nothing in DATA).
    first = os.path.join(root, "first")
    ember("service", "export", service.data, "office", "-o", first)
    with open(os.path.join(first, "bounds.jsonl"), "rb") as handle:
        assert handle.read() == office_bounds()
    assert bounds_files(service.data) == []
    server.stop()

    # The next start (OR-Tools importable) computes them; the page of the same version is made again.
    server = service.serve()
    assert served_bounds(server).content == office_bounds()
    page = wait_for(
        lambda: (answer := page_at(server.url, version)) and "evacuated of possible" in answer.text and answer,
        what="the page with the distance",
    ).text
    ok_rows = OkRows()
    exported = read_results(first, consumers=(ok_rows,))
    distances = Distances(ok_rows, read_bounds(first, exported.campaign))
    distance = distances.policy[f"alpha.{policy}"]
    assert f"{distance.evacuated}/{distance.evacuated_max} (" in page
    assert distance.evacuated_text() in page and 'id="distance-note"' in page
    per_scenario = distances.scenario[f"alpha.{policy}", "office-floor"]
    assert page.count(per_scenario.evacuated_text()) >= 2  # the leaderboard's cell and the scenario's

    # Every export holds them (now the served file, even where OR-Tools is missing); verify checks them.
    export = os.path.join(root, "export")
    ember("service", "export", service.data, "office", "-o", export, env=blocked)
    with open(os.path.join(export, "bounds.jsonl"), "rb") as handle:
        assert handle.read() == office_bounds()
    verified = ember("verify", export, "--log", os.path.join(export, "log.jsonl"), check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    lines = office_bounds().splitlines(keepends=True)
    tampered = lines[0].replace(b'"casualties_min":0', b'"casualties_min":1')
    assert tampered != lines[0]
    with open(os.path.join(export, "bounds.jsonl"), "wb") as handle:
        handle.write(tampered + lines[1])
    verified = ember("verify", export, check=False)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "bounds.jsonl" in verified.stdout + verified.stderr


def spawned_children(pid):
    """The pids of ``pid``'s children started by multiprocessing's spawn (the bounds' child)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in command and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def test_serve_killed_while_computing_leaves_no_file_and_the_next_start_computes_it(service):
    slow = os.path.join(service.root, "slow.toml")
    with open(slow, "w", encoding="utf-8") as handle:
        handle.write(f'campaign = "slow"\nseeds = {SLOW_SEEDS}\nscenarios = ["{SLOW_SCENARIO}"]\n')
    ember("service", "board", "add", service.data, "slow", "--campaign", slow)
    server = service.serve()
    served_bounds(server)  # office's first (boards in name order): the next child is slow's
    (child,) = wait_for(lambda: spawned_children(server.process.pid), what="the child computing slow's bounds")
    assert httpx.get(f"{server.url}/api/boards/slow/bounds.jsonl", timeout=30).status_code == 404
    os.kill(server.process.pid, signal.SIGKILL)  # the serve parent alone
    server.process.wait(timeout=30)
    wait_for(lambda: not alive(child), what="the child's end with its parent")
    server.kill()  # the rest of its session (the verifiers' fork server)
    assert bounds_files(service.data) == ["derived/office/bounds.jsonl"]  # no slow file, no temporary one

    server = service.serve()
    scenario = compile_scenario(SLOW_SCENARIO)
    assert served_bounds(server, "slow").content == b"".join(bounds_line(scenario, seed) for seed in SLOW_SEEDS)
    assert bounds_files(service.data) == ["derived/office/bounds.jsonl", "derived/slow/bounds.jsonl"]
