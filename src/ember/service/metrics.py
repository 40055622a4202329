"""``GET /healthz`` and ``GET /metrics`` (service.md §9), and the middleware that counts requests.

``/metrics`` is Prometheus text made by ``prometheus-client``: requests by route (the endpoint's name, so
the label set is the route table, whatever paths are asked) and status, request-body bytes of uploads
(records and bundles), and, read from the database when scraped (so every server process answers the
same), verifications in progress and hidden-track jobs by state — jobs counted without naming boards or
key sets.  Several ``--workers`` share their counters through prometheus-client's multiprocess mode: the
``serve`` parent gives them a folder of DATA, emptied at each start.
"""

import os
import shutil

import sqlalchemy as sa

from ..errors import DatabaseUnavailableError
from . import tables

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
METRICS_DIR = "metrics"
#: The endpoints whose request bodies are uploads (a record, a bundle).
UPLOADS = ("put_episode", "agents")
JOB_STATES = ("queued", "running", "done", "failed")


def prepare(data):
    """In the ``serve`` parent, before any server process starts: the counters' shared folder, empty."""
    folder = os.path.join(data, METRICS_DIR)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, mode=0o700)
    os.environ[MULTIPROCESS_VARIABLE] = folder


class Meters:
    """The process's counters, made on first use (after ``prepare`` has named the shared folder)."""

    _made = None

    @classmethod
    def get(cls):
        if cls._made is None:
            cls._made = cls()
        return cls._made

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ember_requests", "HTTP requests answered, by route and status", ["route", "status"], registry=self.registry
        )
        self.upload_bytes = Counter(
            "ember_upload_bytes", "request-body bytes received by uploads (records and bundles)", ["route"],
            registry=self.registry,
        )  # fmt: skip


class RequestMetrics:
    """ASGI middleware: one count per answered request, and the bytes of upload bodies as they arrive (the
    body is passed on chunk by chunk, never held)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        meters = Meters.get()
        status = []

        async def counted_receive():
            message = await receive()
            route = _route(scope)
            if message["type"] == "http.request" and route in UPLOADS and message.get("body"):
                meters.upload_bytes.labels(route).inc(len(message["body"]))
            return message

        async def noted_send(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, counted_receive, noted_send)
        finally:
            meters.requests.labels(_route(scope), str(status[0] if status else 500)).inc()


def _route(scope):
    return getattr(scope.get("endpoint"), "__name__", "none")


class DatabaseCollector:
    """Gauges read from the database at each scrape: verifications in progress, jobs by state."""

    def __init__(self, db):
        self.db = db

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        try:
            with self.db.transaction(read=True) as connection:
                c, j = tables.in_flight.c, tables.jobs.c
                verifying = connection.execute(
                    sa.select(sa.func.count()).select_from(tables.in_flight).where(c.kind == "verify")
                ).scalar_one()
                states = dict(connection.execute(sa.select(j.state, sa.func.count()).group_by(j.state)).all())
        except DatabaseUnavailableError:
            return  # /healthz says so; the counters are still served
        yield GaugeMetricFamily("ember_verifications_in_progress", "uploads and bundle checks verifying now", verifying)
        jobs = GaugeMetricFamily("ember_jobs", "hidden-track jobs by state (every board and key set)", labels=["state"])
        for state in JOB_STATES:
            jobs.add_metric([state], states.get(state, 0))
        yield jobs


def exposition(db):
    """(body, content type) of ``GET /metrics``: the counters (every server process's, in multiprocess mode)
    and the database's gauges."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    if os.environ.get(MULTIPROCESS_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(Meters.get().registry)  # a registry is a collector of its metrics
    registry.register(DatabaseCollector(db))
    return generate_latest(registry), CONTENT_TYPE_LATEST


# -- the endpoints (their database failures are answered as every endpoint's are) --------------------


def healthz(request):
    """``GET /healthz``: 200 ``ok`` when the database answers."""
    from starlette.responses import PlainTextResponse

    with request.app.state.service.db.transaction(read=True) as connection:
        connection.execute(sa.text("SELECT 1"))
    return PlainTextResponse("ok\n")


def metrics(request):
    """``GET /metrics``: Prometheus text."""
    from starlette.responses import Response

    body, content_type = exposition(request.app.state.service.db)
    return Response(body, media_type=content_type)
