"""``SealedSessionManager``: the SDK's streamable HTTP session manager, with sealed session ids.

The SDK's manager gives each 2025-11-25 session a random id and keeps it in memory: another
replica, or this one after a restart, answers 404. Here the id is ``SessionBook.issue``'s
sealed one, made from the ``initialize`` request that opens the session (read before the
transport sees it, then handed on unchanged), and a request naming a session this process
does not hold is served when the book can ``resume`` it: a transport is made under the same
id, its connection starts out initialized with what the id holds, and the server's
``restore_session`` gives it back its log level and subscriptions. Anything else still
gets the SDK's 404.

The session's end by ``DELETE`` or by its idle timer is recorded, so its id answers 404 on
every replica from then on; a replica that stops (or dies) records nothing, and its
sessions resume elsewhere. The SDK's private request handling is reached only through
``SdkSessionManager`` (its hooks ``handle_stateful`` and ``serve_opening``), which checks
the SDK still has it; a test per path pins the behaviour.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, Protocol
from uuid import uuid4

import anyio
from anyio.abc import TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext, authorization_context
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import INVALID_PARAMS
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from mcp_aggregator.sessions.sdk_session_manager import SdkSessionManager
from mcp_aggregator.sessions.session_book import ResumedSession, SessionBook
from mcp_aggregator.sessions.session_ledger import SessionState
from mcp_aggregator.sessions.session_seal import MAX_CLIENT_BYTES, kept_of_client

logger = logging.getLogger(__name__)

_SESSION_HEADER: Final = b"mcp-session-id"
_CLIENT_FIELDS: Final = ("protocolVersion", "capabilities", "clientInfo")


class SessionHost(Protocol):
    """The server whose sessions are resumed (``GatewayServer``)."""

    async def restore_session(self, connection: Connection, state: SessionState) -> None: ...


class SealedSessionManager(SdkSessionManager):
    """The SDK's manager (same arguments), issuing and resuming sealed ids (module docstring)."""

    def __init__(self, *args: Any, book: SessionBook, host: SessionHost, profile: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._book = book
        self._host = host
        self._profile = profile
        self._recorded_ended: set[str] = set()
        """Sessions whose end a DELETE recorded (until their loop ends)."""

    async def handle_stateful(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = _header(scope, _SESSION_HEADER)
        requestor = _requestor(scope)
        if session_id is None:
            body, receive = await _read_body(receive)
            client = _initialize_params(body)
            kept = None if client is None else kept_of_client(client)
            if client is not None and kept is None:
                await _too_large(body, scope, receive, send)
                return
            await self._open(kept, requestor, scope, receive, send)
            return
        if session_id not in self.transports:
            await self._resume(session_id, requestor)
        elif scope.get("method") == "DELETE" and requestor == self.owners.get(session_id):
            # Recorded before the client hears the session ended, so that no replica
            # resumes it for the client's (or anyone's) next request.
            await self._book.record(session_id, ended=True)
            self._recorded_ended.add(session_id)
        await self.sdk_handle_stateful(scope, receive, send)

    async def _open(
        self,
        client: dict[str, Any] | None,
        requestor: AuthorizationContext | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        # Without initialize params there is nothing to seal: the transport refuses such a
        # request in its own words, under a throwaway id.
        session_id = uuid4().hex if client is None else self._book.issue(client, requestor, self._profile)
        async with self.creation_lock:
            transport = self._admit(session_id, requestor)
        if transport is None:
            await self.sdk_handle_stateful(scope, receive, send)  # the SDK's 503 at the limit
            return
        await self.serve_opening(transport, scope, receive, send)

    async def _resume(self, session_id: str, requestor: AuthorizationContext | None) -> None:
        resumed = await self._book.resume(session_id, requestor, self._profile)
        if resumed is None:
            return  # the SDK answers 404
        async with self.creation_lock:
            if session_id in self.transports:
                return  # another request of the session resumed it meanwhile
            transport = self._admit(session_id, requestor)
            if transport is None:
                return
            task_group = self.task_group
            assert task_group is not None
            try:
                await task_group.start(partial(self._run_session, transport, resumed))
            except BaseException:
                await self.discard(session_id, transport)
                raise
        logger.info("session %s… resumed here (%s)", session_id[:16], resumed.facts.profile)

    def _admit(self, session_id: str, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self.transports) >= self.max_sessions:
            return None
        transport = StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        if requestor is not None:
            self.owners[session_id] = requestor
        self.transports[session_id] = transport
        return transport

    async def serve_opening(
        self, transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """As the SDK's: a session whose opening request failed is discarded at once."""
        session_id = transport.mcp_session_id
        task_group = self.task_group
        assert session_id is not None and task_group is not None
        established = False
        try:
            await task_group.start(partial(self._run_session, transport, None))
            status: list[int] = []

            async def watch(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status.append(message["status"])
                await send(message)

            await transport.handle_request(scope, receive, watch)
            established = bool(status) and status[0] < 400
        finally:
            if not established:
                await self.discard(session_id, transport)

    async def _run_session(
        self,
        transport: StreamableHTTPServerTransport,
        resumed: ResumedSession | None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        session_id = transport.mcp_session_id
        assert session_id is not None
        ended = idled = False
        connection: Connection | None = None
        try:
            async with transport.connect() as (read_stream, write_stream):
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream, write_stream, inline_methods=frozenset({"initialize"})
                )
                connection = Connection.for_loop(dispatcher, session_id=session_id)
                if resumed is not None:
                    _initialized(connection, resumed)
                task_status.started()
                if resumed is not None:
                    # Outside the manager's creation lock (upstreams may take a while); the
                    # session's requests wait in the transport's stream until it is done.
                    await self._host.restore_session(connection, resumed.state)
                idle_scope = transport.idle_scope or anyio.CancelScope()
                with idle_scope:
                    await serve_connection(
                        self.app, dispatcher, connection=connection, lifespan_state=self.lifespan_state
                    )
                # The loop ended on its own: the client's DELETE or the idle timer, not a
                # replica stopping (that cancels, and the session may resume elsewhere).
                ended = connection.initialize_accepted
                idled = idle_scope.cancelled_caught
        except Exception:
            logger.exception("Session %s… crashed", session_id[:16])
        finally:
            await self.discard(session_id, transport)
        if ended and session_id not in self._recorded_ended:
            with anyio.CancelScope(shield=True):
                await self._book.record(session_id, ended=True)
        # A DELETE's end was recorded before its answer; once is enough (each write queues
        # at the registry's one writer, behind a start's tool writes).
        self._recorded_ended.discard(session_id)
        # Said once the session is gone for good (discarded and booked as ended): a request
        # with its id after this line is refused, never resumed from its seal.
        if idled:
            logger.info("Session %s… idle timeout", session_id[:16])


async def _too_large(body: bytes, scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to an ``initialize`` whose params a session id cannot keep: HTTP 400 with
    a JSON-RPC error naming the bound."""
    try:
        request_id = json.loads(body).get("id")
    except (ValueError, AttributeError):
        request_id = None
    message = (
        f"initialize: the client's capabilities and client info are too large for a session id"
        f" (at most {MAX_CLIENT_BYTES} bytes as JSON, with clientInfo cut to name, title and version"
        " and capabilities.experimental left out)"
    )
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_PARAMS, "message": message}}
    await JSONResponse(error, status_code=400)(scope, receive, send)


def _initialized(connection: Connection, resumed: ResumedSession) -> None:
    """The connection as the handshake left it: version, client params, initialized."""
    params = resumed.facts.initialize_params()
    if params is not None:
        connection.client_params = params
    connection.protocol_version = resumed.facts.protocol_version
    connection.initialized.set()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _requestor(scope: Scope) -> AuthorizationContext | None:
    user = scope.get("user")
    return authorization_context(user) if isinstance(user, AuthenticatedUser) else None


async def _read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The request body, and a ``receive`` that hands it on once more before the rest."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", _replaying([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, _replaying([{"type": "http.request", "body": body, "more_body": False}], receive)


def _replaying(first: list[Message], receive: Receive) -> Callable[[], Awaitable[Message]]:
    pending = list(first)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _initialize_params(body: bytes) -> dict[str, Any] | None:
    """The params of an ``initialize`` request body, as far as a session id keeps them."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    return {name: params[name] for name in _CLIENT_FIELDS if name in params}
