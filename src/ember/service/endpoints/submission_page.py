"""``GET /submissions/{id}``: the page of one of a team's submissions, the same static page for every id; its
script asks for the team's token and shows ``GET /api/submissions/{id}`` (``ember.report.team``)."""

from starlette.responses import Response

from .. import pages
from ..responses import CORS, public


@public
def submission_page(request):
    body, headers = pages.team_page_answer("submission", request.path_params["id"])
    return Response(body, media_type="text/html; charset=utf-8", headers={**CORS, **headers})
