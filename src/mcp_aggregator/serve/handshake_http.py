"""The fast path for handshake-era (2025-11-25) sessions over streamable HTTP.

Such a session lives in the SDK's session manager: a transport per session id, owned by
the credential that opened it, kept alive by an idle timer, and a server connection that
holds what the handshake agreed (version, client capabilities) and, in the gateway, the
log level the client set. A plain ``tools/call`` in such a session (or a prompt, read or
completion bound for a handshake-era upstream, see ``fast_call``) is taken here when all
of that says the full pipeline would do nothing more than relay it: the session is known
to the gateway's server (it has served one of the session's requests), initialized, not
terminated or expiring, asked for by its owner with the version it agreed, from a client
that declared none of sampling, elicitation and roots. The request headers must pass the
transport's own checks (``Accept`` both JSON and event stream, a JSON body).

The answer is what the SDK's transport would send, made cheaper where the client cannot
tell: plain JSON when the upstream sends nothing before the answer, and an event stream
(the upstream's log messages as they come, then the answer) when it does. The session's
idle timer counts the call as the transport counts its own requests, and the client's
``notifications/cancelled`` for a call held here cancels it (the upstream is told).
Everything else in the session goes to the SDK unchanged.

Sessions nobody uses any more are closed by the SDK's idle timer after
``serve.session_idle_secs``. A client that hangs up mid-request is an ordinary event: the
SDK's handler logs it as an error with a traceback, ``quiet_hangups`` makes it one INFO line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import ClientDisconnect
from starlette.types import Scope, Send

from mcp_aggregator.serve.fast_call import FastCalls, FastPlan, asks_mid_call, log_notification
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.request_head import RequestHead
from mcp_aggregator.sessions.sdk_session_manager import SdkSessionManager
from mcp_aggregator.upstreams.stdio_pipe import notification_params

logger = logging.getLogger(__name__)

_HANDSHAKE: Final = frozenset(v.encode() for v in HANDSHAKE_PROTOCOL_VERSIONS)
_CANCELLED: Final = b"notifications/cancelled"
_EVENT: Final = b"event: message\r\ndata: "
_EVENT_END: Final = b"\r\n\r\n"
_SDK_TRANSPORT_LOGGER: Final = "mcp.server.streamable_http"


class HangupFilter(logging.Filter):
    """Turns the SDK's ERROR-with-traceback for a client that hung up mid-request
    (``ClientDisconnect``) into one INFO line; every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], ClientDisconnect):
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
            record.msg, record.args = "a client hung up mid-request (%s); nothing to answer", (record.getMessage(),)
            record.exc_info, record.exc_text = None, None
        return True


@contextlib.contextmanager
def quiet_hangups() -> Iterator[None]:
    """While inside, clients hanging up are logged as ``HangupFilter`` says."""
    sdk_logger = logging.getLogger(_SDK_TRANSPORT_LOGGER)
    hangups = HangupFilter()
    sdk_logger.addFilter(hangups)
    try:
        yield
    finally:
        sdk_logger.removeFilter(hangups)


@dataclass(frozen=True, slots=True)
class HandshakeSession:
    """A session whose plain calls the fast path may answer, as found for one request."""

    session_id: str
    transport: StreamableHTTPServerTransport
    version: str
    log_level: str | None

    @property
    def id_header(self) -> tuple[bytes, bytes]:
        return (b"mcp-session-id", self.session_id.encode())


class HandshakeSessions:
    """Finds the sessions the fast path may serve and answers their calls (module docstring)."""

    def __init__(self, manager: SdkSessionManager, server: GatewayServer, calls: FastCalls) -> None:
        self._manager = manager
        self._server = server
        self._calls = calls
        self._asks: weakref.WeakKeyDictionary[Connection, bool] = weakref.WeakKeyDictionary()
        self._in_flight: dict[tuple[str, Any], asyncio.Task[bytes]] = {}

    def find(self, head: RequestHead, scope: Scope) -> HandshakeSession | None:
        """The session of a handshake-era POST, when the fast path may serve its calls."""
        if head.session_id is None or head.routing.version not in _HANDSHAKE:
            return None
        if head.routing.method is not None or head.routing.name is not None:
            return None  # 2026-07-28 routing headers in a handshake session: the SDK decides
        if not (_accepts_json_and_events(head.accept) and _is_json(head.content_type)):
            return None  # the transport refuses these in its own words
        session_id = head.session_id.decode("latin-1")
        known = self._server.handshake_session(session_id)
        if known is None:
            return None
        connection, level = known
        if not connection.initialized.is_set() or head.routing.version != connection.protocol_version.encode():
            return None
        if self._asks_mid_call(connection):
            return None
        transport = self._manager.transports.get(session_id)
        if transport is None or transport.is_terminated or not _counts_requests(transport):
            return None
        idle = transport.idle_scope
        if idle is not None and idle.cancel_called:
            return None
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        if requestor != self._manager.owners.get(session_id):
            return None  # the manager answers "Session not found", as for any other credential
        return HandshakeSession(session_id, transport, connection.protocol_version, level)

    def _asks_mid_call(self, connection: Connection) -> bool:
        asks = self._asks.get(connection)
        if asks is None:
            capabilities = connection.client_capabilities
            dumped = capabilities.model_dump(exclude_none=True) if capabilities is not None else None
            asks = self._asks[connection] = asks_mid_call(dumped)
        return asks

    def cancels(self, session: HandshakeSession, body: bytes) -> bool:
        """Whether ``body`` cancels a call of ``session`` held here (then it is cancelled)."""
        if _CANCELLED not in body or not self._in_flight:
            return False
        params = notification_params(body, "notifications/cancelled")
        ident = params.get("requestId") if params is not None else None
        task = self._in_flight.get((session.session_id, ident)) if isinstance(ident, str | int) else None
        if task is None:
            return False
        task.cancel()
        return True

    async def accepted(self, session: HandshakeSession, send: Send) -> None:
        """The transport's answer to a notification: 202, no body."""
        headers = [(b"content-type", b"application/json"), session.id_header, (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 202, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def answer(self, session: HandshakeSession, plan: FastPlan, send: Send) -> None:
        """Run ``plan`` and send its answer: JSON, or an event stream once a log message comes first."""
        events: asyncio.Queue[bytes | None] = asyncio.Queue()

        def on_log(params: dict[str, Any]) -> None:
            line = log_notification(params, session.log_level)
            if line is not None:
                events.put_nowait(line)

        key = (session.session_id, plan.client_id)
        # The whole exchange counts against the idle timer, the answer's sending included,
        # as the transport counts a request of its own.
        with _holding(session.transport):
            task = asyncio.ensure_future(self._calls.answer(plan, on_log))
            self._in_flight.setdefault(key, task)
            task.add_done_callback(lambda _: events.put_nowait(None))
            streaming = False
            try:
                while True:
                    line = await events.get()
                    if line is None:
                        break
                    if not streaming:
                        streaming = True
                        await _start_events(session, send)
                    await send({"type": "http.response.body", "body": _event(line), "more_body": True})
                body = self._final(task, plan)
            finally:
                if not task.done():
                    task.cancel()
                if self._in_flight.get(key) is task:
                    del self._in_flight[key]
            await _finish(session, send, body, streaming=streaming)

    def _final(self, task: asyncio.Task[bytes], plan: FastPlan) -> bytes | None:
        """The call's answer; None when it was cancelled."""
        if task.cancelled():
            return None
        error = task.exception()
        if error is None:
            return task.result()
        # One call's failure must not look like the session's: an error response, as the
        # full pipeline gives for a failure of its own.
        logger.error("%s failed", plan.label, exc_info=error)
        return FastCalls.internal_error(plan)


async def _finish(session: HandshakeSession, send: Send, body: bytes | None, *, streaming: bool) -> None:
    """The answer (None: the call was cancelled) as JSON, or as the stream's last event."""
    if streaming:
        await send({"type": "http.response.body", "body": _event(body) if body else b""})
    elif body is None:
        # Cancelled by the client: the transport's stream would end with no event.
        await _start_events(session, send)
        await send({"type": "http.response.body", "body": b""})
    else:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            session.id_header,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _event(line: bytes) -> bytes:
    return b"".join((_EVENT, line, _EVENT_END))


async def _start_events(session: HandshakeSession, send: Send) -> None:
    headers = [
        (b"cache-control", b"no-cache, no-transform"),
        (b"content-type", b"text/event-stream"),
        (b"x-accel-buffering", b"no"),
        session.id_header,
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


@contextlib.contextmanager
def _holding(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """Count a call against the session's idle timer as the transport counts a request of
    its own: the countdown stops while any is in flight and restarts after the last."""
    idle = transport.idle_scope
    timeout = transport._idle_timeout
    if idle is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    idle.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout


def _counts_requests(transport: StreamableHTTPServerTransport) -> bool:
    """The transport keeps the idle accounting ``_holding`` follows (this SDK's does)."""
    return isinstance(getattr(transport, "_requests_in_flight", None), int) and hasattr(transport, "_idle_timeout")


def _media_types(value: bytes | None) -> list[bytes]:
    if value is None:
        return []
    return [part.split(b";")[0].strip().lower() for part in value.split(b",")]


def _accepts_json_and_events(accept: bytes | None) -> bool:
    """As the transport reads ``Accept`` for an event-stream server (wildcards included)."""
    types = _media_types(accept)
    if b"*/*" in types:
        return True
    json = b"application/json" in types or b"application/*" in types
    events = b"text/event-stream" in types or b"text/*" in types
    return json and events


def _is_json(content_type: bytes | None) -> bool:
    """As the transport checks ``Content-Type``."""
    if content_type is None:
        return False
    return any(part.strip() == b"application/json" for part in content_type.split(b";")[0].split(b","))
