"""What every endpoint answers with: JSON errors (service.md §3), the CORS header of public reads, the
exception handlers that turn refusals and failures into answers, and the small readers of a request.

Every error is ``{"error": "<one line>"}``.  A public endpoint (``@public``: an anonymous GET) sends
``Access-Control-Allow-Origin: *`` on its answers, refusals included; so does any GET of an unknown path.
The header is sent whether or not the request has an ``Origin``, which is why it is not Starlette's
``CORSMiddleware`` (that one answers only requests naming their origin).
"""

import asyncio
import json
import logging
import re

from starlette.responses import JSONResponse

from ..canonical import one_line
from .errors import CLOSE, RETRY_AFTER, ServiceRefusal

LOG = logging.getLogger("ember.service")
CORS = {"Access-Control-Allow-Origin": "*"}
#: What a caller hears of a database that is down or locked (service.md §9): its URL, host, port and user
#: tell an attacker where to aim, so they go to the server's log only.
DATABASE_DOWN = "the database is unavailable"
COUNT = re.compile(r"0|[1-9][0-9]{0,18}")
JSON_BODY_BYTES = 64 * 1024


def error(status, message, headers=None, **extra):
    return JSONResponse({"error": one_line(message), **extra}, status, headers=headers)


def public(endpoint):
    """Mark ``endpoint`` as a public read: its refusals carry the CORS header too."""
    endpoint.public = True
    return endpoint


def _cors(request):
    return CORS if getattr(request.scope.get("endpoint"), "public", False) else {}


async def refused(request, exc):
    return error(exc.status, exc, {**exc.headers, **_cors(request)}, **exc.extra)


async def database_down(request, exc):
    LOG.error("%s", exc)
    return error(503, DATABASE_DOWN, {**RETRY_AFTER, **_cors(request)})


async def store_full(request, exc):
    return error(507, exc, {**CLOSE, **_cors(request)})


async def not_found(request, exc):
    """An unknown path or method (Starlette's ``HTTPException``)."""
    headers = dict(getattr(exc, "headers", None) or {})
    if request.method == "GET":
        headers.update(CORS)
    return error(exc.status_code, exc.detail, headers)


async def failure(request, exc):
    return error(500, f"internal error: {type(exc).__name__}")


def count_parameter(request, name, default, maximum):
    """The query parameter ``name`` as an integer >= 0 (at most ``maximum`` unless None); 422 otherwise."""
    text = request.query_params.get(name)
    if text is None:
        return default
    if not COUNT.fullmatch(text) or (maximum is not None and int(text) > maximum):
        bound = f" at most {maximum}" if maximum is not None else ""
        raise ServiceRefusal(422, f"?{name}=: expected a decimal integer >= 0{bound}, got {text!r:.40}")
    return int(text)


async def threaded(function, *args):
    """``function(*args)`` in the default thread pool (database work, off the event loop)."""
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


async def json_body(request, limit=JSON_BODY_BYTES):
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise ServiceRefusal(413, f"a JSON body is at most {limit:,} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ServiceRefusal(400, f"the body is not JSON: {exc}") from None
