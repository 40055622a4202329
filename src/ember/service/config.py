"""``DATA/service.toml``: the database URL and the limits of service.md §3 (with their defaults).

Written once by ``ember service init`` at mode 0600 (a PostgreSQL URL may
hold a password); read by every other service command.  Unknown keys and
wrong types are refused, naming the key.
"""

import contextlib
import dataclasses
import os

from ..errors import ServiceError

CONFIG_FILE = "service.toml"
DATABASE_FILE = "ember.db"
#: DATA/records: the record store (store.py), where a verified upload's record is kept by its hash.
RECORD_STORE_DIR = "records"
#: In the record store and in DATA/jobs: the folder of bodies still streaming (an upload's record, a bundle),
#: before they are checked; the ``serve`` parent empties both at start (service.md §8).
TMP_DIR = "tmp"
DATABASE_VARIABLE = "EMBER_DATABASE_URL"
MiB = 1 << 20
#: What the service's processes create is their owner's alone (service.md §9): the database file and its
#: -wal/-shm, records, jobs, derived files.
UMASK = 0o077
#: DATA itself: its owner's alone.  The sandbox's mounts are made with the service's rights (isolation.md
#: 1.1), so the job's bundle copy, the one thing in DATA made readable for the sandbox's uid, is reached
#: only through its bind.
DATA_MODE = 0o700
#: The mode bits of group and others that ``serve`` refuses on DATA, the database file and the record store.
OPEN_BITS = 0o066


@dataclasses.dataclass(frozen=True)
class ServiceLimits:
    """The limits of service.md §3; each a positive integer (seconds or bytes or counts)."""

    max_record_bytes: int = 256 * MiB
    max_decompressed_bytes: int = 4096 * MiB
    uploads_per_team: int = 4
    max_verifications: int = 0  # 0: the CPU count
    verifications_per_team: int = 1  # of its uploads and bundle checks at once, so no team starves the others
    submissions_per_day: int = 10
    # A body sending under body_window_bytes in any body_window_s spent waiting for bytes is ended (408),
    # as is one taking more than body_max_s in all.
    body_window_s: int = 30
    body_window_bytes: int = 30 * 1024
    body_max_s: int = 3600
    # Request headers: complete within header_timeout_s, at most max_header_bytes.
    header_timeout_s: int = 10
    max_header_bytes: int = 16 * 1024
    # The hidden track (service.md §6): a bundle as sent and unpacked, its manifest's maxima, jobs.
    max_bundle_bytes: int = 64 * MiB
    max_bundle_unpacked_bytes: int = 512 * MiB
    max_bundle_members: int = 10_000
    max_step_timeout: int = 10
    max_memory_mb: int = 2048
    max_episode_timeout: int = 3600
    jobs_per_day: int = 3
    # A job's lease: renewed every third of it while its evaluator lives; an expired lease is taken over.
    job_lease_s: int = 30

    def verifications(self):
        return self.max_verifications or os.cpu_count() or 1


#: The limits a ``[boards.NAME]`` table of service.toml may set for one board (its bundles' maxima).
BOARD_LIMITS = ("max_step_timeout", "max_memory_mb", "max_episode_timeout")


@dataclasses.dataclass(frozen=True)
class ServiceConfig:
    data: str
    database: str
    limits: ServiceLimits
    boards: dict = dataclasses.field(default_factory=dict)

    def board_limits(self, name):
        """The limits that hold for board ``name``: ``[limits]`` with its ``[boards.NAME]`` maxima."""
        return dataclasses.replace(self.limits, **self.boards.get(name, {}))

    @property
    def records(self):
        return os.path.join(self.data, RECORD_STORE_DIR)

    @property
    def derived(self):
        return os.path.join(self.data, "derived")


@contextlib.contextmanager
def private_files():
    """The block creates files and folders with the service's umask (``UMASK``)."""
    before = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(before)


def sqlite_file(database):
    """The file of a ``sqlite:///`` URL, or None (PostgreSQL, or SQLite in memory)."""
    import sqlalchemy as sa

    url = sa.engine.make_url(database)
    return url.database if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") else None


def check_private(config):
    """Refuse (``ServiceError`` naming the path) a DATA, database file or record store group or others can read."""
    database = sqlite_file(config.database)
    paths = [config.data, config.records]
    if database is not None:
        paths += [database] + [database + suffix for suffix in ("-wal", "-shm")]
    for path in paths:
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            continue  # the -wal and -shm files come and go; a missing DATA or database is refused elsewhere
        if mode & OPEN_BITS:
            raise ServiceError(
                f"{path}: group or others can read it (mode {mode:04o}); expected only its owner: chmod go-rwx {path}"
            )


def default_database(data):
    return f"sqlite:///{os.path.join(os.path.abspath(data), DATABASE_FILE)}"


def config_text(database):
    """The first ``service.toml``: the database and every limit at its default, to be edited."""
    import tomli_w

    limits = {f.name: f.default for f in dataclasses.fields(ServiceLimits)}
    text = tomli_w.dumps({"database": database, "limits": limits})
    return "# EMBER service (docs/service.md); limits as service.md §3 (max_verifications 0: the CPU count).\n" + text


def _toml(path):
    try:
        import tomllib
    except ImportError:  # Python 3.10: the tomli backport, a dependency there
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ServiceError(f"{path}: missing: not a service directory ('ember service init' makes one)") from None
    except OSError as exc:
        raise ServiceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ServiceError(f"{path}: not valid TOML: {exc}") from None


def read_config(data):
    """The ``ServiceConfig`` of the service directory ``data``; raises ``ServiceError``."""
    path = os.path.join(data, CONFIG_FILE)
    value = _toml(path)
    for key in value:
        if key not in ("database", "limits", "boards"):
            raise ServiceError(f"{path}: {key}: unknown key; expected 'database', 'limits' or 'boards'")
    database = value.get("database")
    if not isinstance(database, str) or not database:
        raise ServiceError(f"{path}: database: expected a SQLAlchemy URL (a string), got {database!r}")
    table = value.get("limits", {})
    if not isinstance(table, dict):
        raise ServiceError(f"{path}: limits: expected a table")
    names = {f.name for f in dataclasses.fields(ServiceLimits)}
    for key, item in table.items():
        if key not in names:
            raise ServiceError(f"{path}: limits.{key}: unknown limit; expected one of {', '.join(sorted(names))}")
        minimum = 0 if key == "max_verifications" else 1
        if type(item) is not int or item < minimum:
            raise ServiceError(f"{path}: limits.{key}: expected an integer >= {minimum}, got {item!r}")
    boards = value.get("boards", {})
    if not isinstance(boards, dict) or not all(isinstance(item, dict) for item in boards.values()):
        raise ServiceError(f"{path}: boards: expected a table of [boards.NAME] tables")
    for name, item in boards.items():
        for key, limit in item.items():
            if key not in BOARD_LIMITS:
                expected = ", ".join(BOARD_LIMITS)
                raise ServiceError(f"{path}: boards.{name}.{key}: unknown key; expected one of {expected}")
            if type(limit) is not int or limit < 1:
                raise ServiceError(f"{path}: boards.{name}.{key}: expected an integer >= 1, got {limit!r}")
    return ServiceConfig(os.path.abspath(data), database, ServiceLimits(**table), boards)
