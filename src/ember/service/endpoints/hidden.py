"""The hidden track's endpoints (service.md §3): a bundle's upload and its job's status."""

from starlette.responses import JSONResponse

from .. import evaluation


async def agents(request):
    return await evaluation.receive_bundle(request.app.state.service, request)


def job(request):
    service = request.app.state.service
    team = service.team(request)
    return JSONResponse(evaluation.job_status(service, request.path_params["id"], team))
