"""The body of an upload (a record or a bundle) as it streams, within the time limits of service.md §3."""

import asyncio
import time

from ..errors import CLOSE, ServiceRefusal


async def body_chunks(request, limits):
    """The request body's chunks as they arrive; 408 for a body that stalls or takes too long in all.

    A body must send ``body_window_bytes`` within every ``body_window_s`` the server spends waiting for it
    (the time spent verifying does not count), and end within ``body_max_s``.
    """
    started = time.monotonic()
    waited = window_start = 0.0
    window_bytes = 0
    while True:
        left = min(limits.body_window_s - (waited - window_start), limits.body_max_s - (time.monotonic() - started))
        before = time.monotonic()
        try:
            message = await asyncio.wait_for(request.receive(), timeout=max(left, 0.001))
        except asyncio.TimeoutError:
            if time.monotonic() - started >= limits.body_max_s:
                reason = f"the body took more than {limits.body_max_s} s in all"
            else:
                reason = f"the body sent under {limits.body_window_bytes:,} bytes in {limits.body_window_s} s"
            raise ServiceRefusal(408, reason, headers=CLOSE) from None
        waited += time.monotonic() - before
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the client went away")
        body = message.get("body", b"")
        window_bytes += len(body)
        if window_bytes >= limits.body_window_bytes:
            window_start, window_bytes = waited, 0
        if body:
            yield body
        if not message.get("more_body", False):
            return
