"""The service's refusals (service.md §3): an HTTP status, a one-line message, and the headers they carry."""

from ..errors import ServiceError


def retry_after(seconds):
    """The headers of a refusal that passes: the caller may send again in ``seconds``."""
    return {"Retry-After": str(seconds)}


#: A limit reached, a verification that stopped: the caller may send again shortly.
RETRY_AFTER = retry_after(5)
#: A refusal answered before its body is read: the connection closes, the rest of the body is not waited for.
CLOSE = {"Connection": "close"}


class ServiceRefusal(ServiceError):
    """The service refuses a request (service.md §3): ``status`` is the HTTP status, ``extra`` more keys of
    the JSON answer (a 409's ``id``), ``headers`` its headers (``Retry-After``, ``Connection: close``)."""

    def __init__(self, status, message, extra=None, headers=None):
        super().__init__(message)
        self.status = status
        self.extra = extra or {}
        self.headers = headers or {}
