"""A team's submissions (service.md §3): create one, its status, close, withdraw, and each episode's upload."""

from starlette.responses import JSONResponse

from .. import submissions
from ..errors import ServiceRefusal
from ..responses import json_body, threaded


async def create_submission(request):
    service = request.app.state.service
    team = await threaded(service.team, request)
    board = await threaded(service.board, request.path_params["board"])
    body = await json_body(request)
    if not isinstance(body, dict) or "policy" not in body or not set(body) <= {"policy", "description", "link"}:
        raise ServiceRefusal(422, 'expected a JSON object {"policy": NAME} (and optional "description", "link")')
    submission_id = await threaded(
        submissions.create, service.db, board, team, body["policy"], service.limits.submissions_per_day,
        body.get("description"), body.get("link"),
    )  # fmt: skip
    return JSONResponse({"id": submission_id}, 201)


def _own_submission(request):
    """(service, submission, its board) of the path's submission, which must be the token's team's."""
    service = request.app.state.service
    team = service.team(request)
    found, board = service.submission(request.path_params["id"], team)
    return service, found, board


def submission_status(request):
    service, found, board = _own_submission(request)
    return JSONResponse(submissions.status(service.db, board, found))


def close(request):
    service, found, board = _own_submission(request)
    return JSONResponse(submissions.close(service.db, board, found))


def withdraw(request):
    service, found, board = _own_submission(request)
    return JSONResponse(submissions.withdraw(service.db, board, found))


async def put_episode(request):
    """``PUT /api/submissions/{id}/episodes/{scenario_id}/{seed}``: the record, verified as it streams."""
    service = request.app.state.service
    team = await threaded(service.team, request)
    found, board = await threaded(service.submission, request.path_params["id"], team)
    key = (request.path_params["scenario"], request.path_params["seed"])
    status, row = await submissions.receive_episode(service, request, team, found, board, *key)
    return JSONResponse(row, status)
