"""The service's database: one SQLAlchemy engine, its transactions, its migrations (service.md §1, §8).

SQLite (the default, one file in DATA) runs in WAL mode with a 5 s busy
timeout, and every transaction is ``BEGIN IMMEDIATE``: writers queue for
the lock up front instead of failing half-way when a reader upgrades.
PostgreSQL is reached by URL through psycopg 3.  A database that is
down, locked or unreachable is a ``DatabaseUnavailableError`` naming the
database without its password (the HTTP answer is 503).
"""

import contextlib
import os

import sqlalchemy as sa

from ..canonical import one_line
from ..errors import DatabaseUnavailableError, ServiceError

MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")
BUSY_TIMEOUT_S = 5


def _one_line(exc):
    orig = getattr(exc, "orig", None) or exc
    return one_line(orig)


class Database:
    """The engine of one database URL; ``transaction()`` is the one way to read or write it."""

    def __init__(self, url):
        try:
            parsed = sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise ServiceError(f"database URL: {exc}") from None
        self.shown = parsed.render_as_string(hide_password=True)
        self.sqlite = parsed.get_backend_name() == "sqlite"
        if self.sqlite:
            engine = sa.create_engine(
                parsed, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False}, pool_pre_ping=False
            )
            sa.event.listen(engine, "connect", _sqlite_connect)
            sa.event.listen(engine, "begin", _sqlite_begin)
        elif parsed.get_backend_name() == "postgresql":
            engine = sa.create_engine(parsed, connect_args={"connect_timeout": BUSY_TIMEOUT_S}, pool_pre_ping=True)
        else:
            raise ServiceError(f"database URL {self.shown}: expected sqlite:/// or postgresql+psycopg://")
        self.engine = engine

    def unavailable(self, exc):
        return DatabaseUnavailableError(f"the database {self.shown} is unavailable: {_one_line(exc)}")

    @contextlib.contextmanager
    def transaction(self, read=False):
        """A connection inside one transaction, committed on leaving the block; database failures are
        ``DatabaseUnavailableError`` (an ``IntegrityError``, a constraint the caller relies on, is passed on).

        ``read``: the block only reads (on SQLite a deferred ``BEGIN``: in WAL mode it sees one snapshot
        and waits for no writer); otherwise SQLite's write lock is taken up front (``BEGIN IMMEDIATE``).
        """
        try:
            with self.engine.connect() as connection:
                if read:
                    connection = connection.execution_options(ember_read=True)
                with connection.begin():
                    yield connection
        except sa.exc.IntegrityError:
            raise
        except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.InternalError) as exc:
            raise self.unavailable(exc) from None
        except sa.exc.DBAPIError as exc:
            if exc.connection_invalidated:
                raise self.unavailable(exc) from None
            raise

    # -- migrations --------------------------------------------------------------------

    def _alembic(self):
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", MIGRATIONS)
        return config

    def heads(self):
        """The schema versions the code expects (Alembic heads)."""
        from alembic.script import ScriptDirectory

        return set(ScriptDirectory.from_config(self._alembic()).get_heads())

    def current(self):
        """The database's schema versions (empty for a new database)."""
        from alembic.runtime.migration import MigrationContext

        with self.transaction(read=True) as connection:
            return set(MigrationContext.configure(connection).get_current_heads())

    def pending(self):
        return self.current() != self.heads()

    def migrate(self, revision="head"):
        """Apply the pending migrations up to ``revision`` (all of them by default)."""
        from alembic import command

        config = self._alembic()
        with self.transaction() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    def dispose(self):
        self.engine.dispose()


def _sqlite_connect(dbapi_connection, _record):
    # The driver's own transaction handling off: SQLAlchemy's "begin" event below starts each one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _sqlite_begin(connection):
    connection.exec_driver_sql("BEGIN" if connection.get_execution_options().get("ember_read") else "BEGIN IMMEDIATE")
