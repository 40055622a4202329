"""What the service benchmarks share: a real ``ember service serve`` on 127.0.0.1, started and waited for."""

import os
import socket
import subprocess
import sys
import time

import httpx


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(data, folder, workers=2):
    """``serve DATA --workers N`` on a free port, its output in ``folder/server.log``, answering ``GET /api``:
    (the process, its URL)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(folder, "server.log"), "wb")  # noqa: SIM115 (the server's, for as long as it runs)
    server = subprocess.Popen(
        [sys.executable, "-m", "ember.cli", "service", "serve", data, "--port", str(port), "--workers", str(workers)],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    log.close()  # the child has its own descriptor
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")
