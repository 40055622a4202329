"""``ember service reverify`` and ``ember service backup`` (service.md §2)."""

import json
import os
import shutil
import sqlite3
import subprocess

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..engine.authenticate import authenticate_record
from ..errors import EmberError, ServiceError
from . import audit, tables
from .boards import compiled_scenario, load_board
from .config import RECORD_STORE_DIR, private_files
from .store import RecordStore


def reverify(config, db, name):
    """Re-authenticate every stored record of board ``name``; one ``reverify`` entry per row that differs.

    Returns (rows checked, list of (row's record, reason) that differ).  No row is changed.
    """
    store = RecordStore(config.records)
    with db.transaction(read=True) as connection:
        board = load_board(connection, name)
        if board is None:
            raise ServiceError(f"board {name!r}: no such board")
        s, r = tables.submissions.c, tables.rows.c
        found = connection.execute(
            sa.select(r.row, r.stored, tables.teams.c.name.label("team"), s.policy)
            .join(tables.submissions, s.id == r.submission_id)
            .join(tables.teams, tables.teams.c.id == s.team_id)
            .where(s.board_id == board.id)
            .order_by(r.seq)
        ).all()
    differ = []
    for item in found:
        row = json.loads(bytes(item.row))
        scenario = board.by_id[row["scenario_id"]]
        try:
            metrics, sha = authenticate_record(compiled_scenario(scenario), store.path(item.stored))
        except (EmberError, OSError) as exc:
            reason = f"the engine refuses the record: {' '.join(str(exc).split())}"
        else:
            reason = None
            if sha != row["record_sha256"]:
                reason = f"the record's SHA-256 is {sha}, the row has {row['record_sha256']}"
            elif canonical_json_reference(metrics.to_dict()) != canonical_json_reference(row["metrics"]):
                reason = "the metrics recomputed differ from the row's"
        if reason is not None:
            differ.append((row["record"], reason))
            with db.transaction() as connection:
                audit.append(
                    connection, board.id, "reverify", team=item.team, policy=item.policy, row=None,
                    data={"record": row["record"], "record_sha256": row["record_sha256"], "reason": reason},
                )  # fmt: skip
    return len(found), differ


def backup(config, db, out):
    """A consistent copy of the database at ``out`` and ``out.records`` (the stored records it names).

    SQLite: the database file copied by SQLite's online backup.  PostgreSQL: ``pg_dump --format=custom``
    (restore with ``pg_restore``) of a snapshot exported by a repeatable-read transaction that also lists
    the records, so the list and the dump are one moment.  Both files are the operator's alone (0600: the
    copy holds the hidden seeds).  Returns the number of records named.
    """
    if os.path.lexists(out):
        raise ServiceError(f"{out}: exists already; a backup goes to a new file")
    with private_files():
        try:
            named = _sqlite_copy(db, out) if db.sqlite else _pg_dump(db, out)
            with open(out + ".records", "x", encoding="utf-8") as handle:
                handle.writelines(os.path.join(RECORD_STORE_DIR, stored) + "\n" for stored in named)
        except BaseException:
            for path in (out, out + ".records"):
                if os.path.lexists(path):
                    os.remove(path)
            raise
    return len(named)


def _sqlite_copy(db, out):
    raw = db.engine.raw_connection()
    try:
        target = sqlite3.connect(out)
        try:
            raw.driver_connection.backup(target)
        finally:
            target.close()
    finally:
        raw.close()
    copy = sqlite3.connect(out)
    try:
        return sorted({row[0] for row in copy.execute("SELECT stored FROM rows")})
    finally:
        copy.close()


def _pg_dump(db, out):
    program = shutil.which("pg_dump")
    if program is None:
        raise ServiceError("pg_dump is not on PATH: install PostgreSQL's client programs (the server's major version)")
    url = db.engine.url
    env = dict(os.environ)
    if url.password is not None:
        env["PGPASSWORD"] = url.password  # never on the command line, which other users can read
    uri = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    try:
        connect = db.engine.connect().execution_options(isolation_level="REPEATABLE READ")
        with connect as connection, connection.begin():
            snapshot = connection.execute(sa.text("SELECT pg_export_snapshot()")).scalar_one()
            named = sorted(set(connection.execute(sa.select(tables.rows.c.stored)).scalars()))
            done = subprocess.run(
                [program, "--format=custom", "--no-password", f"--snapshot={snapshot}", f"--file={out}", uri],
                env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
            )  # fmt: skip
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
        raise db.unavailable(exc) from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        raise ServiceError(f"pg_dump of {db.shown} failed: {lines[-1]}")
    return named
