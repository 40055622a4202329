"""The data directory is the operator's alone (service.md §9): another uid on the machine reads nothing of DATA.

The attack is a real process of uid 65534 (``setpriv``) reading the database file and its write-ahead log,
a stored record, the configuration and a job's results, of a real service that accepted a record and ran
a hidden job.  ``serve`` refuses a DATA, database file or record store that group or others can read.
"""

import glob
import os
import subprocess

import pytest

from helpers.bundles import python_bundle
from helpers.hidden import HiddenService, wait_folder_gone
from helpers.service import ember, record_of

OTHER_UID = "65534"


def read_as_another_uid(path):
    """(exit code, stderr) of ``cat PATH`` (``ls`` of a folder) run as uid and gid 65534 with no other group."""
    reader = "/bin/ls" if os.path.isdir(path) else "/bin/cat"
    done = subprocess.run(
        ["setpriv", "--reuid", OTHER_UID, "--regid", OTHER_UID, "--clear-groups", "--", reader, path],
        capture_output=True,
        timeout=60,
    )
    return done.returncode, done.stderr.decode(errors="replace")


@pytest.fixture
def hidden(database):
    made = HiddenService(hidden_seeds=1, teams=("alpha",), database=database)
    yield made
    made.close()


def test_another_uid_reads_nothing_of_data(hidden, database, runs):
    server = hidden.serve()
    with hidden.client("alpha") as alpha:
        created = alpha.post("/api/boards/office/submissions", json={"policy": "p"})
        put = alpha.put(
            f"/api/submissions/{created.json()['id']}/episodes/office-floor/0",
            content=record_of(runs["alpha"][0], "greedy", 0),
        )
    assert put.status_code == 201, put.text
    job = hidden.submit("alpha", python_bundle(os.path.join(hidden.root, "walker.tar.gz")))
    hidden.wait_job("alpha", job)
    data = hidden.data
    # The job's working folder (its bundle copy, hidden scenarios, results) goes once its rows are in (the
    # job reads "done" in the transaction of its last row, the folder goes just after); while it lives it
    # sits in jobs/, which no other uid may even search; what stays is the database, the records, the kept
    # bundle and the derived files.
    wait_folder_gone(data, job)
    assert os.stat(os.path.join(data, "jobs")).st_mode & 0o777 == 0o700
    secret = [
        os.path.join(data, "service.toml"),
        os.path.join(data, "jobs"),
        os.path.join(data, "records", put.json()["record_sha256"][:2]),
        *glob.glob(os.path.join(data, "records", "*", "*.record*")),
        *glob.glob(os.path.join(data, "bundles", "*")),
        *glob.glob(os.path.join(data, "derived", "office", "*")),
    ]
    if database is None:
        secret += [os.path.join(data, "ember.db"), os.path.join(data, "ember.db-wal")]
    assert all(os.path.exists(path) for path in secret) and len(secret) >= (9 if database is None else 7), secret
    for path in secret:
        code, message = read_as_another_uid(path)
        assert code != 0 and "Permission denied" in message, (path, code, message)
    code, message = read_as_another_uid(data)  # not even the list of its names
    assert code != 0 and "Permission denied" in message, message
    assert server.alive()


def modes(data):
    """{path relative to DATA: mode} of everything in DATA."""
    found = {".": os.stat(data).st_mode & 0o777}
    for folder, folders, files in os.walk(data):
        for name in folders + files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, data)] = os.lstat(path).st_mode & 0o777
    return found


def test_init_makes_data_and_everything_in_it_the_operators(tmp_path):
    data = str(tmp_path / "DATA")
    ember("service", "init", data)
    made = modes(data)
    expected = {".": 0o700, "service.toml": 0o600, "records": 0o700, "ember.db": 0o600}
    assert made == {**expected, "signing.key": 0o600, "signing.pub": 0o600}, made


@pytest.mark.parametrize("where", [".", "ember.db", "records"])
@pytest.mark.parametrize("mode", [0o750, 0o704])
def test_serve_refuses_a_data_directory_group_or_others_can_read(tmp_path, where, mode):
    data = str(tmp_path / "DATA")
    ember("service", "init", data)
    path = os.path.normpath(os.path.join(data, where))
    os.chmod(path, mode if os.path.isdir(path) else mode & 0o666)
    done = ember("service", "serve", data, "--port", "1", check=False, timeout=60)
    shown = oct(mode if os.path.isdir(path) else mode & 0o666)[2:].rjust(4, "0")
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        f"ember: {path}: group or others can read it (mode {shown}); expected only its owner: chmod go-rwx {path}\n"
    ), done.stderr
