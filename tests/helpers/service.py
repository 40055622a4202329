"""Real parts for the service tests (tests/service/): a PostgreSQL cluster, a service directory, a server.

``PostgresCluster`` is a throw-away cluster made with initdb/pg_ctl in a
temporary directory, run as ``nobody`` when the tests run as root
(PostgreSQL refuses to run as root), listening on 127.0.0.1 only.
``Server`` runs ``ember service serve`` as a real process (uvicorn) on a
free loopback port, in its own session so its worker processes end with it.
"""

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def _postgres_bin():
    """The newest of Debian's PostgreSQL installations (``postgresql`` installs /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    return os.path.dirname(found[-1]) if found else "/usr/lib/postgresql/15/bin"


PG_BIN = _postgres_bin()
START_TIMEOUT_S = 60
CAMPAIGN_TEMPLATE = """
campaign = "{name}"
seeds = [0, 1]
scenarios = ["builtin:office"]
"""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ember(*args, check=True, env=None, timeout=300, **options):
    """``ember ARGS`` as a process; its CompletedProcess (stdout and stderr as text)."""
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        **options,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"ember {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}")
    return done


def _as_postgres_user():
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


class PostgresCluster:
    """A PostgreSQL cluster of its own; ``database()`` makes a new empty database and returns its URL."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="ember-pg-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.data = os.path.join(self.root, "data")
        self.port = free_port()
        self.count = 0
        if os.geteuid() == 0:
            os.chown(self.root, 65534, 65534)
        self._run(os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()

    def _run(self, *argv):
        done = subprocess.run([*_as_postgres_user(), *argv], capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")

    def start(self):
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} -c fsync=off"
        )
        self._run(os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "-o",
                  options, "start")  # fmt: skip

    def stop(self):
        self._run(os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop")

    def url(self, name="postgres"):
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def database(self):
        import psycopg

        self.count += 1
        name = f"ember_{self.count}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def close(self):
        with contextlib.suppress(AssertionError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class Server:
    """``ember service serve DATA`` on a free loopback port, as a real process; ``url`` once it answers."""

    def __init__(self, data, workers=1, env=None, extra=()):
        self.data = data
        self.workers = workers
        self.env = env
        self.extra = list(extra)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None
        self.start()

    def start(self):
        self.log = open(os.path.join(os.path.dirname(self.data), f"server-{self.port}.log"), "ab")  # noqa: SIM115
        argv = [sys.executable, "-m", "ember.cli", "service", "serve", self.data, "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*argv, "--workers", str(self.workers), *self.extra],
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
            env={**os.environ, **(self.env or {})},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server ended with {self.process.returncode}: {self.read_log()}")
            try:
                if httpx.get(self.url + "/api", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not answer within {START_TIMEOUT_S} s: {self.read_log()}")

    def read_log(self):
        with open(self.log.name, "rb") as handle:
            return handle.read().decode(errors="replace")

    def alive(self):
        return self.process.poll() is None and httpx.get(self.url + "/api", timeout=10).status_code == 200

    def kill(self):
        """SIGKILL to the server and every process of its session (its workers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.log.close()

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        self.log.close()


class Service:
    """A service directory with board ``office`` (builtin:office, seeds 0 and 1) and teams; ``server`` once
    started.  ``limits`` replace defaults in service.toml."""

    def __init__(self, root, database=None, limits=None, teams=("alpha", "beta", "gamma")):
        # In-process, by the library calls the commands make (tests/service/test_commands.py runs the commands).
        from ember.service.registry import add_board, add_team, init_service, open_service

        self.root = root
        self.data = os.path.join(root, "DATA")
        init_service(self.data, database)
        if limits:
            path = os.path.join(self.data, "service.toml")
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            for key, value in limits.items():
                lines = [line for line in text.splitlines() if not line.startswith(f"{key} = ")]
                text = "\n".join(lines) + "\n"
                text = text.replace("[limits]\n", f"[limits]\n{key} = {value}\n")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        campaign = os.path.join(root, "board.toml")
        with open(campaign, "w", encoding="utf-8") as handle:
            handle.write(CAMPAIGN_TEMPLATE.format(name="office"))
        _, db = open_service(self.data)
        try:
            add_board(db, "office", campaign)
            self.tokens = {team: add_team(db, team) for team in teams}
        finally:
            db.dispose()
        self.server = None

    def token_file(self, team):
        path = os.path.join(self.root, f"{team}.token")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.tokens[team] + "\n")
        return path

    def serve(self, workers=1):
        self.server = Server(self.data, workers)
        return self.server

    def headers(self, team):
        return {"Authorization": f"Bearer {self.tokens[team]}"}

    def client(self, team=None):
        headers = self.headers(team) if team else {}
        return httpx.Client(base_url=self.server.url, headers=headers, timeout=60)

    def stored_files(self):
        """Every file in the record store (names relative to it), temporary ones too."""
        found = []
        records = os.path.join(self.data, "records")
        for folder, _, files in os.walk(records):
            found += [os.path.relpath(os.path.join(folder, name), records) for name in files]
        return sorted(found)

    def close(self):
        if self.server is not None:
            self.server.stop()


def team_results(base, name, policy, seeds=(0, 1)):
    """A team's own ``--keep-records`` campaign of one built-in policy on builtin:office; its results directory."""
    campaign = os.path.join(base, f"{name}.toml")
    with open(campaign, "w", encoding="utf-8") as handle:
        handle.write(
            f'campaign = "{name}"\nseeds = {list(seeds)}\nscenarios = ["builtin:office"]\n\n'
            f'[[policies]]\nname = "{policy}"\nbuiltin = "{policy}"\n'
        )
    results = os.path.join(base, f"{name}-results")
    ember("evaluate", campaign, "-o", results, "--keep-records", "--workers", "1")
    return results


def record_of(results, policy, seed, scenario_id="office-floor"):
    """The bytes of a kept record (gzip) of a team's results directory."""
    with open(os.path.join(results, "records", policy, scenario_id, f"{seed}.record.gz"), "rb") as handle:
        return handle.read()


def wait_for(condition, timeout=60, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not hold within {timeout} s")


def raw_request(port, method, path, headers=(), body_parts=(), pause_after=None, timeout=60):
    """An HTTP/1.1 request written by hand on a socket (paths sent as they are, bodies as slowly as asked):
    (status, {header: value}, body bytes) of the answer.

    ``body_parts`` are sent one after the other; after the part numbered ``pause_after`` nothing more is sent
    until the server answers (a stalling body).
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
        sock.sendall(head.encode("latin-1"))
        for number, part in enumerate(body_parts):
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed: read what it said
            if pause_after is not None and number == pause_after:
                break
        data = b""
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                raise AssertionError(f"the server closed the connection without an answer: {data!r}")
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        answer = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            answer[name.strip().lower()] = value.strip()
        length = int(answer.get("content-length", "0"))
        while len(rest) < length:
            piece = sock.recv(65536)
            if not piece:
                break
            rest += piece
        return status, answer, rest


class SampleService:
    """A running service whose board ``office`` holds one closed submission of ``record`` (the command table's
    samples, tests/helpers/command_samples.py): ``reverify`` and ``submit`` then print the same line every time."""

    def __init__(self, base, campaign, record, scenario_id):
        self.data = os.path.join(base, "service-DATA")
        ember("service", "init", self.data)
        ember("service", "board", "add", self.data, "office", "--campaign", campaign)
        self.token_file = os.path.join(base, "alpha.token")
        with open(self.token_file, "w", encoding="utf-8") as handle:
            handle.write(ember("service", "team", "add", self.data, "alpha").stdout)
        self.source = os.path.join(base, "submitted")
        os.makedirs(os.path.join(self.source, scenario_id))
        shutil.copyfile(record, os.path.join(self.source, scenario_id, "0.record"))
        self.server = Server(self.data)
        self.url = self.server.url
        ember("submit", self.url, "office", "--token-file", self.token_file, "--policy", "greedy", self.source)
        # A done hidden-track job on board ``secret``: 'jobs' shows it.
        from helpers.bundles import python_bundle

        hidden = os.path.join(base, "hidden.toml")
        with open(campaign, encoding="utf-8") as source, open(hidden, "w", encoding="utf-8") as handle:
            handle.write(source.read())
        ember("service", "board", "add", self.data, "secret", "--campaign", campaign, "--hidden", hidden)
        bundle = python_bundle(os.path.join(base, "walker.tar.gz"))
        sent = ember("submit", self.url, "secret", "--token-file", self.token_file, "--agent", bundle)
        self.job = sent.stdout.split()[3]
        with open(self.token_file, encoding="utf-8") as handle:
            headers = {"Authorization": f"Bearer {handle.read().strip()}"}
        wait_for(
            lambda: httpx.get(f"{self.url}/api/jobs/{self.job}", headers=headers).json()["state"] in ("done", "failed"),
            timeout=300, what=f"job {self.job} to end",
        )  # fmt: skip

    def close(self):
        self.server.stop()
