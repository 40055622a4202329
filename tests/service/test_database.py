"""The database (service.md §1, §2): migrations from an empty database and from the previous schema version,
on SQLite and PostgreSQL; ``serve`` refuses a pending migration; ``init`` applies it and changes nothing else."""

import os

import pytest
import sqlalchemy as sa

from ember.errors import ServiceError
from ember.service import tables
from ember.service.database import Database
from ember.service.registry import init_service, open_service

from helpers.service import ember


def url_of(database, tmp_path):
    return database or f"sqlite:///{tmp_path / 'DATA' / 'ember.db'}"


def table_names(db):
    with db.transaction(read=True) as connection:
        return set(sa.inspect(connection).get_table_names())


def test_migrations_from_an_empty_database_make_the_schema_of_the_code(database, tmp_path):
    os.makedirs(tmp_path / "DATA")
    db = Database(url_of(database, tmp_path))
    assert db.current() == set() and db.pending()
    db.migrate()
    assert not db.pending() and db.current() == db.heads() == {"0008_phases"}
    assert table_names(db) == set(tables.metadata.tables) | {"alembic_version"}
    with db.transaction(read=True) as connection:
        inspector = sa.inspect(connection)
        for name, table in tables.metadata.tables.items():
            assert {c["name"] for c in inspector.get_columns(name)} == set(table.columns.keys()), name
    db.dispose()


def test_a_database_of_the_previous_schema_keeps_its_rows_when_migrated(database, tmp_path):
    data = str(tmp_path / "DATA")
    os.makedirs(data)
    url = url_of(database, tmp_path)
    db = Database(url)
    db.migrate("0001")
    assert table_names(db) >= {"teams", "boards", "log"} and "jobs" not in table_names(db)
    with db.transaction() as connection:
        connection.execute(sa.insert(tables.teams).values(name="alpha", folded="alpha", created_at="x"))
    db.dispose()
    # A service directory on that database: serve refuses it until init applies the migration.
    with open(os.path.join(data, "service.toml"), "w", encoding="utf-8") as handle:
        handle.write(f'database = "{url}"\n')
    with pytest.raises(ServiceError, match="pending migrations: run 'ember service init"):
        open_service(data)
    refused = ember("service", "serve", data, "--port", "9", check=False)
    assert refused.returncode == 2 and "pending migrations" in refused.stderr
    with open(os.path.join(data, "service.toml"), "rb") as handle:
        before = handle.read()
    init_service(data)
    with open(os.path.join(data, "service.toml"), "rb") as handle:
        assert handle.read() == before  # init on an existing DATA changes nothing else
    config, db = open_service(data)
    assert db.current() == {"0008_phases"} and "hidden_rows" in table_names(db)
    with db.transaction(read=True) as connection:
        assert connection.execute(sa.select(tables.teams.c.name)).scalars().all() == ["alpha"]
    db.dispose()


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path):
    init_service(str(tmp_path / "DATA"))
    _, db = open_service(str(tmp_path / "DATA"))
    with db.transaction(read=True) as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    db.dispose()
    assert os.stat(tmp_path / "DATA" / "service.toml").st_mode & 0o777 == 0o600


def test_a_hidden_row_of_the_1_0_schema_is_a_live_one_with_its_entry_after_the_migration(database, tmp_path):
    os.makedirs(tmp_path / "DATA")
    db = Database(url_of(database, tmp_path))
    db.migrate("0003")
    board = {"name": "b", "versions": b"{}", "version": 1, "created_at": "x"}
    job = {"id": "j", "board_id": 1, "team_id": 1, "policy": "p", "state": "done", "bundle": "x", "created_at": "x"}
    row = {"job_id": "j", "scenario_id": "s", "seed": 5, "row": b"{}", "row_sha256": "0" * 64, "seq": 2}
    with db.transaction() as connection:
        connection.execute(sa.insert(tables.teams).values(id=1, name="alpha", folded="alpha", created_at="x"))
        connection.execute(sa.text("INSERT INTO boards (id, name, versions, version, created_at) "
                                   "VALUES (1, :name, :versions, :version, :created_at)"), board)  # fmt: skip
        columns = ", ".join(job)
        connection.execute(
            sa.text(f"INSERT INTO jobs ({columns}) VALUES ({', '.join(':' + name for name in job)})"), job
        )
        connection.execute(sa.text("INSERT INTO hidden_rows (job_id, scenario_id, seed, row, row_sha256, seq) "
                                   "VALUES (:job_id, :scenario_id, :seed, :row, :row_sha256, :seq)"), row)  # fmt: skip
    db.migrate()
    with db.transaction(read=True) as connection:
        r, j, b = tables.hidden_rows.c, tables.jobs.c, tables.boards.c
        assert connection.execute(sa.select(r.seq, r.stderr)).all() == [(2, None)]
        assert connection.execute(sa.select(j.key_set, j.origin)).all() == [(None, None)]  # a live job
        assert connection.execute(sa.select(b.hidden_state)).all() == [(None,)]
    db.dispose()
