"""The HTTP API of service.md §3: the route table of a Starlette application, run by uvicorn.

JSON in and out; every error is ``{"error": "<one line>"}`` (unknown paths and methods too), made by the
exception handlers of ``responses`` from the refusals (``errors.ServiceRefusal``) and failures the
endpoints raise.  Path segments are looked up in the board and the database, never joined into a file
path.  The endpoints are the functions of ``endpoints``; what they share is ``app.state.service``, made
once from the service directory's configuration when the application is made.
"""

import asyncio
import contextlib
import logging
import os

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Route

from ..errors import DatabaseUnavailableError, RecordStoreFullError
from ..results.layout import EPISODES_FILE, RANKING_FILE, RECORDS_DIR, SCENARIOS_DIR, STATISTICS_FILE
from . import bounds, metrics
from .config import read_config
from .endpoints import about, boards, derived, job_page, submission_page, submissions
from .errors import ServiceRefusal
from .hidden import endpoints as hidden
from .protocol import DATA_VARIABLE
from .responses import LOG, database_down, failure, not_found, refused, store_full
from .state import Service

ROUTES = [
    Route("/", about.index, methods=["GET"]),
    Route("/boards/{board}", boards.board_page, methods=["GET"]),
    Route("/submissions/{id}", submission_page.submission_page, methods=["GET"]),
    Route("/jobs/{id}", job_page.job_page, methods=["GET"]),
    Route("/api", about.api, methods=["GET"]),
    Route("/api/boards", boards.boards_json, methods=["GET"]),
    Route("/api/boards/{board}", boards.board_json, methods=["GET"]),
    Route(f"/api/boards/{{board}}/{SCENARIOS_DIR}/{{scenario}}", boards.scenario_json, methods=["GET"]),
    Route(f"/api/boards/{{board}}/{RANKING_FILE}", derived.ranking, methods=["GET"]),
    Route(f"/api/boards/{{board}}/{STATISTICS_FILE}", derived.statistics, methods=["GET"]),
    Route(f"/api/boards/{{board}}/{EPISODES_FILE}", derived.episodes, methods=["GET"]),
    Route("/api/boards/{board}/hidden/{set}/bounds.jsonl", bounds.hidden_bounds, methods=["GET"]),
    Route("/api/boards/{board}/hidden/{file}", derived.hidden, methods=["GET"]),
    Route("/api/boards/{board}/hidden/{set}/{file}", derived.hidden, methods=["GET"]),
    Route("/api/boards/{board}/bounds.jsonl", bounds.board_bounds, methods=["GET"]),
    Route("/api/boards/{board}/log", boards.board_log, methods=["GET"]),
    Route("/api/boards/{board}/log/head", boards.log_head, methods=["GET"]),
    Route("/api/boards/{board}/submissions", boards.board_submissions, methods=["GET"]),
    Route("/api/boards/{board}/submissions", submissions.create_submission, methods=["POST"]),
    Route("/api/boards/{board}/agents", hidden.agents, methods=["POST"]),
    Route(f"/api/{RECORDS_DIR}/{{h}}", derived.record, methods=["GET"]),
    Route("/api/submissions/{id}", submissions.submission_status, methods=["GET"]),
    Route("/api/submissions/{id}/close", submissions.close, methods=["POST"]),
    Route("/api/submissions/{id}/withdraw", submissions.withdraw, methods=["POST"]),
    Route("/api/submissions/{id}/episodes/{scenario}/{seed}", submissions.put_episode, methods=["PUT"]),
    Route("/api/jobs/{id}", hidden.job, methods=["GET"]),
    Route("/healthz", metrics.healthz, methods=["GET"]),
    Route("/metrics", metrics.metrics, methods=["GET"]),
]

EXCEPTION_HANDLERS = {
    ServiceRefusal: refused,
    DatabaseUnavailableError: database_down,
    RecordStoreFullError: store_full,
    HTTPException: not_found,
    Exception: failure,
}


@contextlib.asynccontextmanager
async def lifespan(app):
    """A server process's start and end: the verifying process kept ahead of its uploads (``Spare``) is
    started, and ended before the process ends."""
    spare = app.state.service.spare
    await asyncio.get_running_loop().run_in_executor(None, spare.open)
    try:
        yield
    finally:
        await asyncio.get_running_loop().run_in_executor(None, spare.close)


def create_app(data=None):
    """The ASGI application of the service directory ``data`` (default: ``$EMBER_SERVICE_DATA``, how
    ``serve`` names it to uvicorn's worker processes); its configuration is read here, once."""
    if not LOG.handlers:  # the server's log is its stderr (uvicorn configures only its own loggers)
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s ember.service %(levelname)s: %(message)s"))
        LOG.addHandler(handler)
    app = Starlette(
        routes=ROUTES,
        middleware=[Middleware(metrics.RequestMetrics)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.service = Service(read_config(data or os.environ[DATA_VARIABLE]))
    return app
