"""A board's public reads (service.md §3, §4, §5): its page, JSON, scenarios, audit log and signed head,
and its submissions."""

from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response

from .. import anchor, audit, pages, submissions
from ..errors import ServiceRefusal
from ..responses import CORS, count_parameter, public

MAX_LOG = 1000


@public
def board_page(request):
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    found = pages.newest_page(service, board)
    if found is None:
        return HTMLResponse(pages.pending_html(board), headers={**CORS, **pages.page_headers(0)})
    path, headers = found
    return FileResponse(path, media_type="text/html; charset=utf-8", headers={**CORS, **headers})


@public
def board_json(request):
    return JSONResponse(request.app.state.service.board_json(request.path_params["board"]), headers=CORS)


@public
def boards_json(request):
    """Every board's JSON, as ``GET /api/boards/{board}`` answers it, by name."""
    return JSONResponse(request.app.state.service.boards_json(), headers=CORS)


@public
def scenario_json(request):
    board = request.app.state.service.board(request.path_params["board"])
    name = request.path_params["scenario"]
    data = board.scenario_bytes(name[: -len(".json")]) if name.endswith(".json") else None
    if data is None:
        raise ServiceRefusal(404, f"board {board.name} has no scenario {name!r:.80}")
    return Response(data, media_type="application/json", headers=CORS)


@public
def board_log(request):
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    after = count_parameter(request, "after", 0, None)
    limit = count_parameter(request, "limit", MAX_LOG, MAX_LOG)
    with service.db.transaction(read=True) as connection:
        lines = audit.entries(connection, board.id, after, limit)
    return Response(b"".join(line + b"\n" for line in lines), media_type="application/x-ndjson", headers=CORS)


@public
def log_head(request):
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    with service.db.transaction(read=True) as connection:
        seq, digest = audit.last(connection, board.id)
    head = anchor.sign_head(service.key, board.name, seq, digest, audit.now())
    # The bytes of an export's log.head.json: a head fetched here can be kept and checked as it is.
    return Response(anchor.head_bytes(head), media_type="application/json", headers=CORS)


@public
def board_submissions(request):
    """The board's closed submissions; with a token, that team's others too (then not a public answer)."""
    service = request.app.state.service
    board = service.board(request.path_params["board"])
    team = service.optional_team(request)
    return JSONResponse(submissions.listing(service.db, board, team), headers=CORS if team is None else None)
