"""The derived files of a board's export (service.md §3, §7, §9): ranking, statistics and episodes of the
open track and of the hidden track's sets, and the records of ranked rows."""

import os
import re

from starlette.responses import FileResponse, Response

from ...results.layout import EPISODES_FILE, RANKING_FILE, STATISTICS_FILE
from .. import submissions
from ..derived import latest
from ..errors import ServiceRefusal
from ..hidden.secrecy import revealed_record
from ..responses import CORS, public

RECORD = re.compile(r"[0-9a-f]{64}")
#: The API serves a board's export under the export's own names (service.md §3, §7).
DERIVED = (RANKING_FILE, STATISTICS_FILE, EPISODES_FILE)


def derived_file(request, file, streamed=False, track="open"):
    service = request.app.state.service
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


@public
def ranking(request):
    return derived_file(request, RANKING_FILE)


@public
def statistics(request):
    return derived_file(request, STATISTICS_FILE)


@public
def episodes(request):
    return derived_file(request, EPISODES_FILE, streamed=True)


@public
def hidden(request):
    board = request.app.state.service.board(request.path_params["board"])
    if board.hidden is None:
        raise ServiceRefusal(404, f"board {board.name} has no hidden track")
    name = request.path_params["file"]
    chosen = request.path_params.get("set")
    chosen = board.hidden_track("hidden") if chosen is None else chosen  # 1.0's paths: final, or live
    if name not in DERIVED or chosen not in ("live", "final"):
        raise ServiceRefusal(404, "no such file of the hidden track")
    if chosen == "live" and not board.has_live:
        raise ServiceRefusal(404, f"board {board.name} has no live key")
    # service.md §9: nothing of the final keys before the reveal; the live rows after it.
    if (chosen == "final" or name == EPISODES_FILE) and not board.revealed:
        raise ServiceRefusal(404, f"the hidden track's {chosen} {name} is served after the reveal")
    return derived_file(request, name, streamed=name == EPISODES_FILE, track=chosen)


@public
def record(request):
    """A record of a ranked row: of a closed submission, or of a revealed hidden row."""
    service = request.app.state.service
    digest = request.path_params["h"]
    if not RECORD.fullmatch(digest):
        raise ServiceRefusal(404, "no such record (expected 64 lowercase hex characters)")
    with service.db.transaction(read=True) as connection:
        stored = submissions.ranked_record(connection, digest)
        if stored is None:
            stored = revealed_record(connection, digest)
    if stored is None:
        raise ServiceRefusal(404, "no such record of a ranked row")
    return FileResponse(service.store.path(stored), media_type="application/octet-stream", headers=CORS)
