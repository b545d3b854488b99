"""``RequestIds``: every HTTP request gets an id, echoed in ``X-Request-Id`` and on its log lines.

A sane id the client sent (``X-Request-Id``, up to 128 of ``[A-Za-z0-9._:-]``) is kept, so a
request can be followed from a client or a proxy through the gateway; otherwise a random one
is made. The MCP handlers put it on the call's ``Caller``, so the audit trail, the trace span
and the log lines of a call carry the same id as the access line. Each request ends with
one access line on ``mcp_aggregator.access``: at INFO for the admin API's writes and for
every failure (status 400 and up), at DEBUG for the rest (MCP traffic, which the audit
trail records, and reads: a polling web page would otherwise fill the log).
"""

from __future__ import annotations

import logging
import re
import time
from random import randbytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_aggregator.logs import current_request_id

access_log = logging.getLogger("mcp_aggregator.access")
HEADER = b"x-request-id"
_SANE = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
ADMIN_PREFIX = "/api/"
REQUEST_ID_KEY = "mcp_aggregator.request_id"
"""Where the request's id is kept in the ASGI scope: the MCP handlers put it on the ``Caller``
(a handshake-era session's handler runs in that session's task, not the request's)."""


def new_request_id() -> str:
    # Not a secret: an id to follow a request by; no system call per request (and made on
    # every fast-path call: ``randbytes(...).hex()`` costs half of formatting ``getrandbits``).
    return randbytes(8).hex()


def is_sane(value: bytes) -> bool:
    """Whether a client's ``X-Request-Id`` value is kept as the request's id."""
    return _SANE.match(value) is not None


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's id when it is sane, else a new random one. Pure but for the randomness."""
    for name, value in headers:
        if name == HEADER and _SANE.match(value):
            return value.decode("ascii")
    return new_request_id()


def request_id_of(scope: object) -> str | None:
    """The id ``RequestIds`` gave the request of this ASGI scope (None: not an HTTP request)."""
    found = scope.get(REQUEST_ID_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, str) else None


class RequestIds:
    """ASGI middleware; outermost, so that even a refused request has an id and an access line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(scope["headers"])
        scope[REQUEST_ID_KEY] = request_id
        token = current_request_id.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (HEADER, request_id.encode("ascii"))]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            method = scope["method"]
            admin_write = method not in _READS and scope["path"].startswith(ADMIN_PREFIX)
            level = logging.INFO if admin_write or status >= 400 else logging.DEBUG
            if access_log.isEnabledFor(level):
                millis = (time.perf_counter() - started) * 1000
                access_log.log(
                    level, "%s %s %d %.1f ms request_id=%s", method, scope["path"], status, millis, request_id
                )
            current_request_id.reset(token)
