"""``ember service serve`` (service.md §2, §8): the start-up sweep, the derived files, uvicorn.

The ``serve`` parent refuses a database with a pending migration, sweeps
the record store (every temporary file no live process writes; stored
records no row names, older than an hour), forgets the uploads in flight
of a server that was killed, starts the ``Deriver`` and ``Bounder`` (each
board's files made only under its lease, so that of several hosts sharing
the database and the store one makes them), the hidden track's
``Evaluator`` and the ``Revealer`` of the boards' ``reveal_at`` (in this
process only) and then runs uvicorn with ``--workers`` server processes
sharing the database.  It also removes the working folder of
every job that is no longer queued or running (a server killed between a
job's end and that folder's removal).  Header limits are uvicorn's
protocol settings: h11's incomplete-event size bounds a request's header
bytes, and ``protocol.HeaderDeadline`` their time.
"""

import contextlib
import os

import sqlalchemy as sa

from . import metrics, tables
from .anchor import load_key
from .app import DATA_VARIABLE
from .bounds import Bounder, remove_partial
from .config import TMP_DIR, UMASK, check_private
from .derived import Deriver
from .hidden.evaluator import Evaluator
from .hidden.jobs import ACTIVE, bundle_uploads, jobs_root, remove_folder
from .hidden.reveal_at import Revealer
from .leases import BOARD, SERVER, SERVER_VARIABLE, Leases
from .pages import write_page
from .registry import open_service
from .store import RecordStore, abandoned
from .uploads.slots import clear_slots


def start_up(config, db):
    """The parent's sweep (service.md §8); returns the names of the files removed."""
    with db.transaction(read=True) as connection:
        named = set(connection.execute(sa.select(tables.rows.c.stored)).scalars())
        named |= set(connection.execute(sa.select(tables.hidden_rows.c.stored)).scalars())
    clear_slots(db)
    bundles = bundle_uploads(config)
    if os.path.isdir(bundles):
        for name in os.listdir(bundles):
            if abandoned(os.path.join(bundles, name)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(bundles, name))  # bundles a killed server was receiving
    # The folders first, then the jobs still active: a job never becomes active again once it ended, so a
    # folder listed here whose job is not active afterwards is no evaluator's (another host's included).
    folders = os.listdir(jobs_root(config)) if os.path.isdir(jobs_root(config)) else []
    with db.transaction(read=True) as connection:
        active = set(connection.execute(sa.select(tables.jobs.c.id).where(tables.jobs.c.state.in_(ACTIVE))).scalars())
    for name in folders:
        if name != TMP_DIR and name not in active:
            remove_folder(config, db, name)  # a job that ended just before its server was killed
    return RecordStore(config.records).sweep(named)


def checked(data):
    """(config, db) of a DATA ``serve`` may run on: migrated, the operator's alone (service.md §9); from now on
    this process and its children create files with the service's umask."""
    os.umask(UMASK)
    config, db = open_service(data)
    try:
        check_private(config)
    except BaseException:
        db.dispose()
        raise
    return config, db


#: uvicorn's loggers: its own messages from warnings up, and its access log, one line per request (the
#: time, the client, the request line and the status), all on standard error (the journal, under systemd).
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {
            "()": "uvicorn.logging.DefaultFormatter",
            "fmt": "%(levelprefix)s %(message)s",
            "use_colors": False,
        },
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": '%(asctime)s %(client_addr)s "%(request_line)s" %(status_code)s',
            "datefmt": "%Y-%m-%dT%H:%M:%S%z",
            "use_colors": False,
        },
    },
    "handlers": {
        "default": {"formatter": "default", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        "access": {"formatter": "access", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "WARNING", "propagate": False},
        "uvicorn.error": {"level": "WARNING"},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}


def serve(data, host="127.0.0.1", port=8000, workers=1, scheduler=None):
    import uvicorn

    config, db = checked(data)
    load_key(config.data)  # a DATA without its signing key is refused here, not in each worker
    start_up(config, db)
    # Each board's derived files and bounds are made by the one serve parent holding its lease, however many
    # hosts share the database and the store; the leases are renewed while this process lives.
    leases = Leases(db, config.limits.job_lease_s)
    leases.hold(SERVER, leases.holder)  # this parent's own: its servers' upload slots live while it does
    os.environ[SERVER_VARIABLE] = leases.holder
    remove_partial(config, mine=lambda board: leases.hold(BOARD, board))
    bounder = Bounder(config, db, leases=leases)
    bounder.start()
    deriver = Deriver(config, db, also=(write_page,), leases=leases)
    deriver.start()
    evaluator = Evaluator(config, db, scheduler=scheduler or config.scheduler)
    evaluator.start()
    revealer = Revealer(db)  # its first round now: a board whose reveal_at passed while serve was down reveals
    revealer.start()
    os.environ[DATA_VARIABLE] = config.data
    metrics.prepare(config.data)
    limits = config.limits
    try:
        uvicorn.run(
            "ember.service.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            http="ember.service.protocol:HeaderDeadline",
            h11_max_incomplete_event_size=limits.max_header_bytes,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=5,
            log_config=LOG_CONFIG,
            access_log=True,
            server_header=False,
        )
    finally:
        bounder.close()
        deriver.stop.set()
        evaluator.stop.set()
        leases.close()
        revealer.stop.set()
