"""A service with a hidden track for tests/service/test_hidden*.py: real ``ember service`` commands and servers.

The service directory lives in a folder every uid may search (under
/tmp, mode 0755): the sandbox's uid must reach each job's unpacked bundle
(isolation.md §2); the sandbox, not the file modes, is what keeps the
rest of DATA from the policy.
"""

import json
import os
import shutil
import tarfile
import tempfile
import time

import httpx

from helpers.service import Server, ember, wait_for

OPEN_CAMPAIGN = 'campaign = "open"\nseeds = [0]\nscenarios = ["builtin:office"]\n'
HIDDEN_CAMPAIGN = 'campaign = "hidden"\nseeds = {{ start = 0, count = {count} }}\nscenarios = ["builtin:office"]\n'
JOB_TIMEOUT_S = 300


class HiddenService:
    """DATA with board ``office``: one open seed and ``hidden_seeds`` secret ones on builtin:office (or the hidden
    campaign file ``hidden_text``); teams.  ``board_added``: the ``board add`` process."""

    def __init__(self, hidden_seeds=2, teams=("alpha", "beta"), limits=None, database=None, hidden_text=None):
        self.root = tempfile.mkdtemp(prefix="ember-hidden-test-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.data = os.path.join(self.root, "DATA")
        ember("service", "init", self.data, *(["--database", database] if database else []))
        if limits:
            path = os.path.join(self.data, "service.toml")
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            for key, value in limits.items():
                text = "\n".join(line for line in text.splitlines() if not line.startswith(f"{key} = ")) + "\n"
                text = text.replace("[limits]\n", f"[limits]\n{key} = {value}\n")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        open_file = self.write("open.toml", OPEN_CAMPAIGN)
        text = hidden_text if hidden_text is not None else HIDDEN_CAMPAIGN.format(count=hidden_seeds)
        hidden_file = self.write("hidden.toml", text)
        self.board_added = ember(
            "service", "board", "add", self.data, "office", "--campaign", open_file, "--hidden", hidden_file
        )
        self.tokens = {team: ember("service", "team", "add", self.data, team).stdout.strip() for team in teams}
        self.server = None

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.root, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(path, mode)
        return path

    def token_file(self, team):
        return self.write(f"{team}.token", self.tokens[team] + "\n", 0o600)

    def serve(self, workers=1, extra=()):
        self.server = Server(self.data, workers, extra=extra)
        return self.server

    def client(self, team=None):
        headers = {"Authorization": f"Bearer {self.tokens[team]}"} if team else {}
        return httpx.Client(base_url=self.server.url, headers=headers, timeout=60)

    def submit(self, team, bundle):
        """``ember submit URL office --agent BUNDLE``: the job's id."""
        done = ember("submit", self.server.url, "office", "--token-file", self.token_file(team), "--agent", bundle)
        return done.stdout.split()[3]

    def job(self, team, job_id):
        with self.client(team) as client:
            answer = client.get(f"/api/jobs/{job_id}")
        assert answer.status_code == 200, answer.text
        return answer

    def wait_job(self, team, job_id, states=("done", "failed"), timeout=JOB_TIMEOUT_S, until=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.job(team, job_id).json()
            if status["state"] in states if until is None else until(status):
                return status
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not get there within {timeout} s: {status}\n{self.server.read_log()}")

    def secret(self):
        """The hidden keys and salt, read from the database as only the operator can."""
        ((data,),) = self.database_rows("SELECT hidden_secret FROM boards WHERE name = 'office'")
        return json.loads(bytes(data))

    def database_rows(self, query, **values):
        """``query`` (SQL with ``:name`` parameters) on the service's database, SQLite or PostgreSQL: its rows."""
        import sqlalchemy as sa

        from ember.service.config import read_config

        engine = sa.create_engine(read_config(self.data).database)
        try:
            with engine.begin() as connection:
                result = connection.execute(sa.text(query), values)
                return [tuple(row) for row in result] if result.returns_rows else []
        finally:
            engine.dispose()

    def close(self):
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def wait_folder_gone(root, job):
    """Wait until job ``job``'s working folder under ``root`` (DATA or the record store) is gone: it goes just
    after the job reads "done" (in the transaction of its last row), once its rows and tails are in."""
    wait_for(lambda: not os.path.exists(os.path.join(root, "jobs", job)), timeout=60, what=f"job {job}'s folder to go")


def without_elapsed(row):
    """A row without its wall time (the one field two runs of the same episode may differ in)."""
    return {key: value for key, value in row.items() if key != "elapsed_s"}


def wait_served(server, path, version=None):
    """The file the service serves at ``path`` once derived (of the board's ``version`` or later)."""

    def ready():
        answer = httpx.get(server.url + path)
        if answer.status_code != 200:
            return None
        if version is not None and int(answer.headers.get("ember-board-version", 0)) < version:
            return None
        return answer

    return wait_for(ready, timeout=120, what=f"GET {path}")


def rerun_locally(hidden, keys, bundle, policy):
    """``ember evaluate`` of the bundle's policy on the revealed seeds, in a folder of its own: its rows."""
    folder = os.path.join(hidden.root, "rerun")
    os.makedirs(folder)
    with tarfile.open(bundle) as archive:
        archive.extractall(folder)  # our own honest bundle
    seeds = sorted(key[2] for key in keys)
    campaign = os.path.join(folder, "c.toml")
    with open(campaign, "w", encoding="utf-8") as handle:
        handle.write(
            f'campaign = "office"\nscenarios = [{{ source = "builtin:office", seeds = {seeds} }}]\n\n'
            f'[[policies]]\nname = "{policy}"\npython = "walker:make_policy"\n'
        )
    results = os.path.join(folder, "results")
    ember("evaluate", campaign, "-o", results, "--keep-records", "--workers", "1")
    with open(os.path.join(results, "episodes.jsonl"), encoding="utf-8") as handle:
        return [without_elapsed(json.loads(line)) for line in handle]
