"""The service itself: ``GET /api`` (its versions and public key) and the front page ``GET /``."""

from starlette.responses import HTMLResponse, JSONResponse

from ...versions import package_version
from .. import pages
from ..responses import CORS, public

SERVICE_VERSION = "1.1"


@public
def api(request):
    service = request.app.state.service
    about = {"service_version": SERVICE_VERSION, "ember": package_version(), "public_key": service.public_key}
    return JSONResponse(about, headers=CORS)


@public
def index(request):
    return HTMLResponse(pages.index_html(request.app.state.service.db), 200, headers=CORS)
