"""docs/operating.md as an operator follows it: the PostgreSQL quick-start's URL form (peer-style, through
the socket folder), ``team add -o``, and ``serve`` started the way the page's systemd unit starts it (its
ExecStart, Environment and UMask), answering, logging one access line per request, and stopping cleanly on
the unit's KillSignal within its TimeoutStopSec."""

import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from helpers.service import ember, free_port, wait_for

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "operating.md")
DOC_EMBER = "/opt/ember/venv/bin/ember"
DOC_DATA = "/srv/ember/data"


def unit():
    """The ``[Service]`` settings of the page's unit file: {key: [values]}."""
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"```ini\n(.*?)```", text, re.S).group(1)
    section, found = None, {}
    for line in block.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and section == "Service":
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_the_unit_names_what_the_service_needs():
    settings = unit()
    assert settings["UMask"] == ["0077"] and settings["KillSignal"] == ["SIGTERM"]
    assert settings["ExecStart"][0].startswith(f"{DOC_EMBER} service serve {DOC_DATA} --host 127.0.0.1 ")
    assert settings["Delegate"] == ["yes"]


def descendants(pid):
    """Every process below ``pid``: its children, theirs (the workers' fork servers), and so on."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8") as handle:
                    parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, below = [], [pid]
    while below:
        parent = below.pop()
        children = [child for child, of in parents.items() if of == parent]
        found += children
        below += children
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_serve_started_as_the_unit_starts_it_answers_logs_and_stops(postgres, database, tmp_path):
    # The quick-start's URL: the role and database through the server's socket folder, no password.
    name = database.rsplit("/", 1)[1]
    url = f"postgresql+psycopg://postgres@/{name}?host={postgres.root}&port={postgres.port}"
    data = str(tmp_path / "data")
    ember("service", "init", data, "--database", url)
    board = tmp_path / "office.toml"
    board.write_text('campaign = "office"\nseeds = [0]\nscenarios = ["builtin:office"]\n')
    ember("service", "board", "add", data, "office", "--campaign", board)
    ember("service", "team", "add", data, "alpha", "-o", tmp_path / "alpha.token")
    assert os.stat(tmp_path / "alpha.token").st_mode & 0o777 == 0o600

    settings = unit()
    port = free_port()
    command = settings["ExecStart"][0].replace(DOC_EMBER, os.path.join(os.path.dirname(sys.executable), "ember"))
    command = command.replace(DOC_DATA, data).replace("--port 8000", f"--port {port}")
    env = dict(os.environ)
    for item in settings.get("Environment", []):
        key, value = item.split("=", 1)
        env[key] = value
    umask = int(settings["UMask"][0], 8)
    log = open(tmp_path / "journal", "wb")  # noqa: SIM115 (closed below)
    started = subprocess.Popen(
        command.split(), stdout=log, stderr=log, env=env, preexec_fn=lambda: os.umask(umask), start_new_session=True
    )
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert started.poll() is None, (tmp_path / "journal").read_text()
            time.sleep(0.1)
        assert httpx.get(f"http://127.0.0.1:{port}/api/boards/office").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/api/boards/nothing").status_code == 404
        time.sleep(0.5)
        journal = (tmp_path / "journal").read_text()
        assert re.search(r'127\.0\.0\.1:\d+ "GET /api/boards/office HTTP/1\.1" 200 OK\n', journal), journal
        assert re.search(r'"GET /api/boards/nothing HTTP/1\.1" 404 Not Found\n', journal), journal
        children = descendants(started.pid)
        assert children  # the workers
        started.send_signal(getattr(signal, settings["KillSignal"][0]))
        code = started.wait(timeout=int(settings["TimeoutStopSec"][0]))
        assert code == 0, (tmp_path / "journal").read_text()
        # The standard library's helpers (the resource tracker, each worker's fork server) end when the pipe
        # from their parent closes, so just after it: each is waited for, and none may stay.
        wait_for(lambda: [pid for pid in children if alive(pid)] == [], timeout=30, what="serve's processes to end")
        assert "Traceback" not in (tmp_path / "journal").read_text()
    finally:
        if started.poll() is None:
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()
        log.close()
