"""The hidden track's endpoints (service.md §3): ``POST /api/boards/{board}/agents``, ``GET /api/jobs/{id}``.

A bundle's body streams to a temporary file of ``DATA/jobs/tmp`` (at most
``max_bundle_bytes`` as sent: 413; a stalling body: 408), is checked
whole (``bundles.check_bundle``, in a verifying process, counted with the
uploads' verifications: 422 naming the member or the manifest's key) and
only then becomes a queued job (202 with its id; 409 after the reveal;
429 while the team has a job queued or running, or past the day's count,
or while it sends another bundle)."""

import contextlib
import os

from starlette.responses import JSONResponse

from .. import phases
from ..boards import load_board
from ..errors import CLOSE, ServiceRefusal
from ..responses import threaded
from ..store import temporary_name
from ..uploads.body import body_chunks
from ..uploads.verifier import in_process
from . import jobs
from .bundles import check_bundle


def _temporary(service):
    folder = jobs.bundle_uploads(service.config)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, temporary_name())


async def agents(request):
    return await receive_bundle(request.app.state.service, request)


def job(request):
    service = request.app.state.service
    team = service.team(request)
    return JSONResponse(job_status(service, request.path_params["id"], team))


async def receive_bundle(service, request):
    team = await threaded(service.team, request)
    board = await threaded(service.board, request.path_params["board"])
    if board.hidden is None:
        raise ServiceRefusal(404, f"board {board.name} has no hidden track", headers=CLOSE)
    if board.hidden.get("revealed") is not None:
        message = f"board {board.name}: the hidden track is revealed; it takes no new bundle"
        raise ServiceRefusal(409, message, headers=CLOSE)
    if board.hidden_state is not None:
        message = f"board {board.name}: the hidden track is being revealed; it takes no new bundle"
        raise ServiceRefusal(409, message, headers=CLOSE)
    phases.refuse_outside(board, bundle=True, headers=CLOSE)
    limits = service.config.board_limits(board.name)
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limits.max_bundle_bytes):
        raise ServiceRefusal(413, f"the bundle is longer than {limits.max_bundle_bytes:,} bytes as sent", headers=CLOSE)
    bundle_slot = await threaded(service.slots.take, team, ("bundle",))
    path = await threaded(_temporary, service)
    try:
        sent = 0
        with open(path, "xb") as handle:
            async for chunk in body_chunks(request, service.limits):
                sent += len(chunk)
                if sent > limits.max_bundle_bytes:
                    raise ServiceRefusal(
                        413, f"the bundle is longer than {limits.max_bundle_bytes:,} bytes as sent", headers=CLOSE
                    )
                handle.write(chunk)
        # Checked in a verifying process, counted with the uploads' verifications (service.md §9).
        check_slot = await threaded(service.slots.take, team, ("verify",))
        try:
            manifest, _ = await threaded(in_process, service.verifiers, check_bundle, path, team.name, limits)
        finally:
            await threaded(service.slots.give_back, check_slot)
        job_id = await threaded(jobs.create, service.config, service.db, board, team, path, manifest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        await threaded(service.slots.give_back, bundle_slot)
    return JSONResponse({"id": job_id}, 202)


def job_status(service, job_id, team):
    with service.db.transaction(read=True) as connection:
        job = jobs.find(connection, job_id, team)
        board = load_board(connection, job.board)
    return jobs.status(service.config, service.db, job, board)
