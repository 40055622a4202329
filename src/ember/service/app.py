"""The HTTP API of service.md §3: a Starlette application, run by uvicorn.

JSON in and out; every error is ``{"error": "<one line>"}`` (unknown
paths and methods too).  Path segments are looked up in the board and the
database, never joined into a file path.  Endpoints that read or write
the database are plain functions, which Starlette runs in its thread
pool; the upload endpoint is the one coroutine: it reads the body as it
streams and hands each chunk to its verifying process (``uploads``), so the event loop
keeps answering other requests while records verify.
"""

import asyncio
import concurrent.futures
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import re
from multiprocessing import forkserver

import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..campaign.driver import package_version
from ..errors import DatabaseUnavailableError, RecordStoreFullError, ServiceRefusal
from ..results.layout import EPISODES_FILE, RANKING_FILE, RECORDS_DIR, SCENARIOS_DIR, STATISTICS_FILE
from . import anchor, audit, bounds, evaluation, metrics, pages, submissions, tables
from .boards import compiled_scenario, load_board
from .config import read_config
from .database import Database
from .derived import latest
from .protocol import DATA_VARIABLE
from .registry import team_of_token
from .store import RecordStore
from .uploads import CLOSE, RETRY_AFTER, Slots, VerifyingProcess, body_chunks

SERVICE_VERSION = "1.1"
#: What a caller hears of a database that is down or locked (service.md §9): its URL, host, port and user
#: tell an attacker where to aim, so they go to the server's log only.
DATABASE_DOWN = "the database is unavailable"
LOG = logging.getLogger("ember.service")
CORS = {"Access-Control-Allow-Origin": "*"}
_SEED = re.compile(r"0|[1-9][0-9]{0,18}")
_RECORD = re.compile(r"[0-9a-f]{64}")
MAX_LOG = 1000
#: The API serves a board's export under the export's own names (service.md §3, §7).
DERIVED = (RANKING_FILE, STATISTICS_FILE, EPISODES_FILE)


def error(status, message, headers=None, **extra):
    return JSONResponse({"error": " ".join(str(message).split()), **extra}, status, headers=headers)


def _refused(exc, cors):
    headers = dict(exc.headers)
    if cors:
        headers.update(CORS)
    return error(exc.status, exc, headers, **exc.extra)


def _database_down(exc, cors):
    LOG.error("%s", exc)
    return error(503, DATABASE_DOWN, {**RETRY_AFTER, **(CORS if cors else {})})


def _store_full(exc, cors):
    return error(507, exc, {**CLOSE, **(CORS if cors else {})})


def answers(cors=False):
    """The endpoint's refusals and failures as JSON answers (``cors``: an anonymous GET's header on them too)."""

    def wrap(endpoint):
        if asyncio.iscoroutinefunction(endpoint):

            @functools.wraps(endpoint)
            async def run_async(request):
                try:
                    return await endpoint(request)
                except ServiceRefusal as exc:
                    return _refused(exc, cors)
                except DatabaseUnavailableError as exc:
                    return _database_down(exc, cors)
                except RecordStoreFullError as exc:
                    return _store_full(exc, cors)

            return run_async

        @functools.wraps(endpoint)
        def run(request):
            try:
                return endpoint(request)
            except ServiceRefusal as exc:
                return _refused(exc, cors)
            except DatabaseUnavailableError as exc:
                return _database_down(exc, cors)

        return run

    return wrap


class Service:
    """What every endpoint shares: the configuration, the database, the record store, the verification pool."""

    def __init__(self, data):
        self.config = read_config(data)
        self.db = Database(self.config.database)
        self.store = RecordStore(self.config.records)
        self.limits = self.config.limits
        self.key = anchor.load_key(self.config.data)
        self.public_key = anchor.public_key_text(self.key)
        self.slots = Slots(self.db, self.limits)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.limits.verifications(), "ember-verify")
        # Verifying processes are forked from a server of their own, started afresh with the engine
        # loaded: never a fork of this process, its threads and its database connections.
        self.verifiers = multiprocessing.get_context("forkserver")
        self.verifiers.set_forkserver_preload(["ember.service.uploads"])
        forkserver.ensure_running()  # now, not on the first upload: its start-up is no upload's time
        self._etags = {}

    # -- lookups -----------------------------------------------------------------------

    def board(self, name):
        with self.db.transaction(read=True) as connection:
            board = load_board(connection, name)
        if board is None:
            raise ServiceRefusal(404, f"no board {name!r:.80}")
        return board

    def team(self, request):
        """The team of the request's bearer token; 401 when it is missing or unknown."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise ServiceRefusal(401, "missing bearer token (Authorization: Bearer TOKEN)")
        with self.db.transaction(read=True) as connection:
            team = team_of_token(connection, token.strip())
        if team is None:
            raise ServiceRefusal(401, "unknown or revoked token")
        return team

    def accepted(self, submission_id, scenario_id, seed):
        with self.db.transaction(read=True) as connection:
            return submissions.accepted(connection, submission_id, scenario_id, seed)

    def optional_team(self, request):
        return self.team(request) if "authorization" in request.headers else None

    def submission(self, submission_id, team):
        with self.db.transaction(read=True) as connection:
            found = submissions.find(connection, submission_id, team)
            board = load_board(connection, found.board)
        return found, board

    def etag(self, path):
        info = os.stat(path)
        key = (path, info.st_mtime_ns, info.st_size)
        if key not in self._etags:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            self._etags[key] = f'"{digest.hexdigest()}"'
        return self._etags[key]


# -- the endpoints ---------------------------------------------------------------------------


def routes(service):
    @answers(cors=True)
    def api(request):
        about = {"service_version": SERVICE_VERSION, "ember": package_version(), "public_key": service.public_key}
        return JSONResponse(about, headers=CORS)

    @answers(cors=True)
    def index(request):
        return HTMLResponse(pages.index_html(service.db), 200, headers=CORS)

    @answers(cors=True)
    def board_page(request):
        board = service.board(request.path_params["board"])
        found = pages.newest_page(service, board)
        if found is None:
            return HTMLResponse(pages.pending_html(board), headers={**CORS, **pages.page_headers(0)})
        path, headers = found
        return FileResponse(path, media_type="text/html; charset=utf-8", headers={**CORS, **headers})

    @answers(cors=True)
    def board_json(request):
        return JSONResponse(service.board(request.path_params["board"]).public(), headers=CORS)

    @answers(cors=True)
    def scenario_json(request):
        board = service.board(request.path_params["board"])
        name = request.path_params["scenario"]
        data = board.scenario_bytes(name[: -len(".json")]) if name.endswith(".json") else None
        if data is None:
            raise ServiceRefusal(404, f"board {board.name} has no scenario {name!r:.80}")
        return Response(data, media_type="application/json", headers=CORS)

    def derived_file(request, file, streamed=False, track="open"):
        board = service.board(request.path_params["board"])
        found = latest(service.config, board.name, track)
        if found is None or found[1] is None:
            raise ServiceRefusal(404, "no ranked submission")
        path = os.path.join(found[1], file)
        etag = service.etag(path)
        headers = {**CORS, "ETag": etag, "Ember-Board-Version": str(found[0])}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        media = "application/x-ndjson" if streamed else "application/json"
        return FileResponse(path, media_type=media, headers=headers)

    @answers(cors=True)
    def ranking(request):
        return derived_file(request, RANKING_FILE)

    @answers(cors=True)
    def statistics(request):
        return derived_file(request, STATISTICS_FILE)

    @answers(cors=True)
    def episodes(request):
        return derived_file(request, EPISODES_FILE, streamed=True)

    @answers(cors=True)
    def hidden(request):
        board = service.board(request.path_params["board"])
        if board.hidden is None:
            raise ServiceRefusal(404, f"board {board.name} has no hidden track")
        name = request.path_params["file"]
        chosen = request.path_params.get("set")
        chosen = board.hidden_track("hidden") if chosen is None else chosen  # 1.0's paths: final, or live
        if name not in (RANKING_FILE, STATISTICS_FILE, EPISODES_FILE) or chosen not in ("live", "final"):
            raise ServiceRefusal(404, "no such file of the hidden track")
        if chosen == "live" and not board.has_live:
            raise ServiceRefusal(404, f"board {board.name} has no live key")
        # service.md §9: nothing of the final keys before the reveal; the live rows after it.
        if (chosen == "final" or name == EPISODES_FILE) and not board.revealed:
            raise ServiceRefusal(404, f"the hidden track's {chosen} {name} is served after the reveal")
        return derived_file(request, name, streamed=name == EPISODES_FILE, track=chosen)

    @answers(cors=True)
    def board_log(request):
        board = service.board(request.path_params["board"])
        after = _count_parameter(request, "after", 0, None)
        limit = _count_parameter(request, "limit", MAX_LOG, MAX_LOG)
        with service.db.transaction(read=True) as connection:
            lines = audit.entries(connection, board.id, after, limit)
        return Response(b"".join(line + b"\n" for line in lines), media_type="application/x-ndjson", headers=CORS)

    @answers(cors=True)
    def log_head(request):
        board = service.board(request.path_params["board"])
        with service.db.transaction(read=True) as connection:
            seq, digest = audit.last(connection, board.id)
        head = anchor.sign_head(service.key, board.name, seq, digest, audit.now())
        # The bytes of an export's log.head.json: a head fetched here can be kept and checked as it is.
        return Response(anchor.head_bytes(head), media_type="application/json", headers=CORS)

    @answers(cors=True)
    def board_submissions(request):
        board = service.board(request.path_params["board"])
        team = service.optional_team(request)
        return JSONResponse(submissions.listing(service.db, board, team), headers=CORS if team is None else None)

    @answers(cors=True)
    def record(request):
        digest = request.path_params["h"]
        if not _RECORD.fullmatch(digest):
            raise ServiceRefusal(404, "no such record (expected 64 lowercase hex characters)")
        s, r = tables.submissions.c, tables.rows.c
        with service.db.transaction(read=True) as connection:
            stored = connection.execute(
                sa.select(r.stored)
                .join(tables.submissions, s.id == r.submission_id)
                .where(r.record_sha256 == digest, s.state == "closed")
            ).scalar()
            if stored is None:
                stored = evaluation.revealed_record(connection, digest)
        if stored is None:
            raise ServiceRefusal(404, "no such record of a ranked row")
        return FileResponse(service.store.path(stored), media_type="application/octet-stream", headers=CORS)

    @answers()
    async def create_submission(request):
        team = await _threaded(service.team, request)
        board = await _threaded(service.board, request.path_params["board"])
        body = await _json_body(request)
        if not isinstance(body, dict) or set(body) != {"policy"}:
            raise ServiceRefusal(422, 'expected a JSON object {"policy": NAME}')
        submission_id = await _threaded(
            submissions.create, service.db, board, team, body["policy"], service.limits.submissions_per_day
        )
        return JSONResponse({"id": submission_id}, 201)

    @answers()
    def submission_status(request):
        team = service.team(request)
        found, board = service.submission(request.path_params["id"], team)
        return JSONResponse(submissions.status(service.db, board, found))

    @answers()
    def close(request):
        team = service.team(request)
        found, board = service.submission(request.path_params["id"], team)
        return JSONResponse(submissions.close(service.db, board, found))

    @answers()
    def withdraw(request):
        team = service.team(request)
        found, board = service.submission(request.path_params["id"], team)
        return JSONResponse(submissions.withdraw(service.db, board, found))

    @answers()
    async def put_episode(request):
        return await upload(service, request)

    @answers()
    async def agents(request):
        return await evaluation.receive_bundle(service, request, _threaded)

    @answers()
    def job(request):
        team = service.team(request)
        return JSONResponse(evaluation.job_status(service, request.path_params["id"], team))

    return [
        Route("/", index, methods=["GET"]),
        Route("/boards/{board}", board_page, methods=["GET"]),
        Route("/api", api, methods=["GET"]),
        Route("/api/boards/{board}", board_json, methods=["GET"]),
        Route(f"/api/boards/{{board}}/{SCENARIOS_DIR}/{{scenario}}", scenario_json, methods=["GET"]),
        Route(f"/api/boards/{{board}}/{RANKING_FILE}", ranking, methods=["GET"]),
        Route(f"/api/boards/{{board}}/{STATISTICS_FILE}", statistics, methods=["GET"]),
        Route(f"/api/boards/{{board}}/{EPISODES_FILE}", episodes, methods=["GET"]),
        Route("/api/boards/{board}/hidden/{set}/bounds.jsonl", answers(True)(bounds.hidden_bounds), methods=["GET"]),
        Route("/api/boards/{board}/hidden/{file}", hidden, methods=["GET"]),
        Route("/api/boards/{board}/hidden/{set}/{file}", hidden, methods=["GET"]),
        Route("/api/boards/{board}/bounds.jsonl", answers(True)(bounds.board_bounds), methods=["GET"]),
        Route("/api/boards/{board}/log", board_log, methods=["GET"]),
        Route("/api/boards/{board}/log/head", log_head, methods=["GET"]),
        Route("/api/boards/{board}/submissions", board_submissions, methods=["GET"]),
        Route("/api/boards/{board}/submissions", create_submission, methods=["POST"]),
        Route("/api/boards/{board}/agents", agents, methods=["POST"]),
        Route(f"/api/{RECORDS_DIR}/{{h}}", record, methods=["GET"]),
        Route("/api/submissions/{id}", submission_status, methods=["GET"]),
        Route("/api/submissions/{id}/close", close, methods=["POST"]),
        Route("/api/submissions/{id}/withdraw", withdraw, methods=["POST"]),
        Route("/api/submissions/{id}/episodes/{scenario}/{seed}", put_episode, methods=["PUT"]),
        Route("/api/jobs/{id}", job, methods=["GET"]),
        Route("/healthz", answers()(metrics.healthz), methods=["GET"]),
        Route("/metrics", answers()(metrics.metrics), methods=["GET"]),
    ]


def _count_parameter(request, name, default, maximum):
    text = request.query_params.get(name)
    if text is None:
        return default
    if not _SEED.fullmatch(text) or (maximum is not None and int(text) > maximum):
        bound = f" at most {maximum}" if maximum is not None else ""
        raise ServiceRefusal(422, f"?{name}=: expected a decimal integer >= 0{bound}, got {text!r:.40}")
    return int(text)


async def _threaded(function, *args):
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


async def _json_body(request, limit=64 * 1024):
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise ServiceRefusal(413, f"a JSON body is at most {limit:,} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ServiceRefusal(400, f"the body is not JSON: {exc}") from None


async def upload(service, request):
    """``PUT /api/submissions/{id}/episodes/{scenario_id}/{seed}`` (service.md §3)."""
    loop = asyncio.get_running_loop()
    team = await _threaded(service.team, request)
    found, board = await _threaded(service.submission, request.path_params["id"], team)
    scenario_id, seed_text = request.path_params["scenario"], request.path_params["seed"]
    scenario = board.by_id.get(scenario_id)
    if scenario is None:
        raise ServiceRefusal(404, f"board {board.name} has no scenario {scenario_id!r:.80}", headers=CLOSE)
    seed = int(seed_text) if _SEED.fullmatch(seed_text) else None
    if seed is None or seed not in scenario.seeds:
        raise ServiceRefusal(
            404, f"scenario {scenario_id} of board {board.name} has no seed {seed_text!r:.40}", headers=CLOSE
        )
    if found.state != "open":
        raise ServiceRefusal(409, f"the submission is {found.state}: nothing can be added to it", headers=CLOSE)
    limits = service.limits
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limits.max_record_bytes):
        raise ServiceRefusal(413, f"the record is longer than {limits.max_record_bytes:,} bytes as sent", headers=CLOSE)
    existing = await _threaded(service.accepted, found.id, scenario_id, seed)
    compiled = await _threaded(compiled_scenario, scenario)
    policy = f"{found.team}.{found.policy}"
    slots = await _threaded(service.slots.take, team, ("upload", "verify") if existing is None else ("upload",))
    try:
        known = None
        if existing is not None:
            message = submissions.other_record(existing.record_sha256, (scenario_id, seed))
            known = (service.store.path(existing.stored), existing.record_sha256, message)
        work = await loop.run_in_executor(
            service.pool, lambda: VerifyingProcess(service.verifiers, compiled, seed, limits, service.store, known)
        )
        try:
            async for chunk in body_chunks(request, limits):
                await loop.run_in_executor(service.pool, work.feed, chunk)
                if work.refusal is not None and work.sent > limits.max_record_bytes:
                    break  # drained as far as the limit allows
            verdict = await loop.run_in_executor(service.pool, work.finish)
            if verdict is None:
                await _threaded(submissions.refuse, service.db, found, scenario_id, seed, work.refusal)
                return error(422, work.refusal, CLOSE)
            metrics, sha = verdict
            if existing is not None:
                status, row = submissions.same_record(existing, sha, (scenario_id, seed))
                return JSONResponse(row, status)
            stored = await loop.run_in_executor(service.pool, work.commit, sha)
        finally:
            await loop.run_in_executor(service.pool, work.discard)
        suffix = stored[stored.index(".record") :]
        record = submissions.record_path(policy, scenario_id, seed, suffix)
        row = submissions.make_row(scenario, seed, policy, metrics, record, sha, work.busy)
        status, row = await _threaded(submissions.accept, service.db, board, found, row, stored)
        return JSONResponse(row, status)
    finally:
        await _threaded(service.slots.give_back, slots)


async def _not_found(request, exc):
    headers = dict(getattr(exc, "headers", None) or {})
    if request.method == "GET":
        headers.update(CORS)
    return error(exc.status_code, exc.detail, headers)


async def _failure(request, exc):
    return error(500, f"internal error: {type(exc).__name__}")


def create_app(data=None):
    """The ASGI application of the service directory ``data`` (default: ``$EMBER_SERVICE_DATA``)."""
    if not LOG.handlers:  # the server's log is its stderr (uvicorn configures only its own loggers)
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s ember.service %(levelname)s: %(message)s"))
        LOG.addHandler(handler)
    service = Service(data or os.environ[DATA_VARIABLE])
    app = Starlette(
        routes=routes(service),
        middleware=[Middleware(metrics.RequestMetrics)],
        exception_handlers={HTTPException: _not_found, Exception: _failure},
    )
    app.state.service = service
    return app
