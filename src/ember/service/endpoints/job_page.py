"""``GET /jobs/{id}``: the page of one of a team's hidden-track jobs, the same static page for every id; its
script asks for the team's token and shows ``GET /api/jobs/{id}`` (``ember.report.team``)."""

from starlette.responses import Response

from .. import pages
from ..responses import CORS, public


@public
def job_page(request):
    body, headers = pages.team_page_answer("job", request.path_params["id"])
    return Response(body, media_type="text/html; charset=utf-8", headers={**CORS, **headers})
