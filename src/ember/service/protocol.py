"""uvicorn's h11 protocol with the header limits of service.md §3 and a JSON answer to a malformed request.

uvicorn's keep-alive timer is reset by every byte, so on its own it does
not bound a client that sends its headers one byte at a time.  Here a
request's head must be complete within ``header_timeout_s`` of the
connection (or, on a kept-alive connection, of the next request's first
byte), else the connection is closed; h11's incomplete-event size (set
from ``max_header_bytes`` by ``serve``) bounds the head's length.  What
h11 cannot parse (a head too long, a malformed line) is answered 400 with
``{"error": ...}`` as every other error of the API.
"""

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DATA_VARIABLE = "EMBER_SERVICE_DATA"


def service_limits(app):
    """The limits of the service behind uvicorn's loaded application ``app`` (its middleware unwrapped):
    those the application read from the configuration when it was made."""
    while not hasattr(app, "state"):
        app = app.app
    return app.state.service.limits


class HeaderDeadline(H11Protocol):
    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        limits = service_limits(self.app)
        self.header_timeout, self.max_header_bytes = limits.header_timeout_s, limits.max_header_bytes
        self.header_timer = None
        self.head_bytes = 0  # bytes of the request head received so far
        self.tail = b""  # its last bytes, where a blank line may begin

    def connection_made(self, transport):
        super().connection_made(transport)
        self.header_timer = self.loop.call_later(self.header_timeout, self.headers_too_slow)

    def data_received(self, data):
        if self.cycle is None or self.cycle.response_complete:  # between requests: this is a request's head
            if self.header_timer is None:
                self.header_timer = self.loop.call_later(self.header_timeout, self.headers_too_slow)
            if self.head_too_long(data):
                self.send_400_response("")
                return
        super().data_received(data)

    def head_too_long(self, data):
        """Count the head's bytes up to its blank line (h11 bounds only a head that arrives in pieces)."""
        seen = self.tail + bytes(data)
        end = seen.find(b"\r\n\r\n")
        length = self.head_bytes - len(self.tail) + (end + 4 if end >= 0 else len(seen))
        if end >= 0:
            self.head_bytes, self.tail = 0, b""
        else:
            self.head_bytes, self.tail = length, seen[-3:]
        return length > self.max_header_bytes

    def handle_events(self):
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle and self.header_timer is not None:  # a request's head is complete
            self.header_timer.cancel()
            self.header_timer = None

    def headers_too_slow(self):
        self.header_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc):
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None
        super().connection_lost(exc)

    def send_400_response(self, msg):
        text = f"the request is not valid HTTP, or its head is longer than {self.max_header_bytes:,} bytes"
        body = json.dumps({"error": text}).encode("ascii")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close"),
        ]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):  # fmt: skip
            self.transport.write(self.conn.send(event))
        self.transport.close()
