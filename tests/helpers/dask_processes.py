"""Real Dask processes for tests: a ``dask scheduler`` and ``dask worker`` processes on loopback.

Started with ``python -m dask`` (the same environment as the tests), each
worker ``--nworkers 1 --nthreads 1 --no-nanny`` so that its PID is the
process that runs the episodes: a SIGKILL to it loses the worker for good.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys

from helpers.campaigns import wait_for

#: How long a Dask process may take to start or to stop.
START_S = 60
#: How long a Dask process told to stop may take before it is killed (the cluster is thrown away).
STOP_S = 15


class DaskProcesses:
    """One scheduler and ``workers`` worker processes; ``address`` once they are all connected."""

    def __init__(self, folder, workers, wrap=None):
        self.folder = folder
        self.count = workers
        self.wrap = wrap or (lambda number: [])  # a worker's command prefix (number -> words)
        self.scheduler_file = folder / "scheduler.json"
        self.scheduler = None
        self.workers = []

    def _start(self, *args, log, prefix=()):
        return subprocess.Popen(
            [*prefix, sys.executable, "-m", "dask", *args],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / log, "wb"),  # noqa: SIM115 (closed with the process)
        )

    def start(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self.scheduler = self._start(
            "scheduler",
            "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(self.scheduler_file),
            log="scheduler.log",
        )  # fmt: skip
        wait_for(self.scheduler_file.exists, timeout=START_S, what="the dask scheduler's file")
        wait_for(lambda: "address" in self._read_file(), timeout=START_S, what="the dask scheduler's address")
        for number in range(self.count):
            self.workers.append(
                self._start(
                    "worker",
                    "--scheduler-file",
                    str(self.scheduler_file),
                    "--host",
                    "127.0.0.1",
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    log=f"worker-{number}.log",
                    prefix=self.wrap(number),
                )  # fmt: skip
            )
        from distributed import Client

        with Client(self.address, set_as_default=False, timeout=START_S) as client:
            client.wait_for_workers(self.count, timeout=START_S)
        return self

    def _read_file(self):
        try:
            return json.loads(self.scheduler_file.read_text())
        except (OSError, ValueError):
            return {}

    @property
    def address(self):
        return self._read_file()["address"]

    def stop(self):
        # The workers first, each waited for, then the scheduler: a worker told to close while its scheduler is
        # going away waits out its connection timeouts (about a minute under load) before it gives up.
        for group in (self.workers, [self.scheduler]):
            for process in group:
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in group:
                if process is None:
                    continue
                try:
                    process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(START_S)
                with contextlib.suppress(Exception):
                    process.stderr.close() if process.stderr else None


@contextlib.contextmanager
def dask_processes(folder, workers, wrap=None):
    cluster = DaskProcesses(folder, workers, wrap)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def without_bwrap(number):
    """Worker 1 sees no bubblewrap: ``/dev/null`` (not executable) bound over it in a mount namespace of its own
    (a ``wrap`` for ``dask_processes``: as on a machine without the package)."""
    if number != 1:
        return []
    found = shutil.which("bwrap")
    script = f'mount --bind /dev/null {found} && exec "$0" "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def worker_pids(address):
    """{worker address: its process id} of the cluster's workers."""
    from distributed import Client

    with Client(address, set_as_default=False, timeout=START_S) as client:
        return client.run(os.getpid)
