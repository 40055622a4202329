"""``ember service reverify`` and ``ember service backup`` (service.md §2)."""

import json
import os
import sqlite3

import sqlalchemy as sa

from ..canonical import canonical_json_reference
from ..engine import authenticate_record
from ..errors import EmberError, ServiceError
from . import audit, tables
from .boards import compiled_scenario, load_board
from .config import RECORDS_DIR
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
    """A consistent copy of a SQLite database at ``out`` and ``out.records`` (the stored records it names).

    Returns the number of records named.  PostgreSQL: a ``ServiceError`` saying to use ``pg_dump``.
    """
    if not db.sqlite:
        raise ServiceError(f"the database {db.shown} is PostgreSQL: back it up with pg_dump (and copy DATA/records)")
    if os.path.exists(out):
        raise ServiceError(f"{out}: exists already; a backup goes to a new file")
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
        named = sorted({row[0] for row in copy.execute("SELECT stored FROM rows")})
    finally:
        copy.close()
    with open(out + ".records", "w", encoding="utf-8") as handle:
        handle.writelines(os.path.join(RECORDS_DIR, stored) + "\n" for stored in named)
    return len(named)
