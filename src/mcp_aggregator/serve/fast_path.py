"""The passthrough fast path on the streamable-HTTP face.

Most calls through a gateway need nothing but the answer: no progress, no questions back
to the client, no log stream. For those, parsing the request into the SDK's models,
building a result model from the upstream's and serialising it again costs more than the
network hop. This ASGI wrapper sits in front of the SDK's ``/mcp`` endpoint and hands a
2026-07-28 (stateless) POST to ``FastCalls``, and a handshake-era session's POST to
``HandshakeSessions`` when it may serve that session; what they decline goes to the SDK
endpoint and the full pipeline unchanged, so behaviour is the same either way.
"""

from __future__ import annotations

from typing import Final

from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_aggregator.serve.client_auth import identity_of
from mcp_aggregator.serve.fast_call import MAX_FAST_BODY, FastCalls, http_status
from mcp_aggregator.serve.handshake_http import HandshakeSession, HandshakeSessions
from mcp_aggregator.serve.request_head import read_head
from mcp_aggregator.serve.request_ids import request_id_of

_MODERN: Final = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)
_JSON_HEADERS: Final = [(b"content-type", b"application/json")]


class FastPath:
    """Wraps the SDK's ``/mcp`` ASGI app; see the module docstring for what it takes."""

    def __init__(self, app: ASGIApp, calls: FastCalls, sessions: HandshakeSessions | None = None) -> None:
        self.app = app
        self.calls = calls
        self.sessions = sessions

    @property
    def forwarded(self) -> int:
        """Calls answered by the fast path (the rest went to the SDK endpoint)."""
        return self.calls.forwarded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.calls.enabled or scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        head = read_head(scope["headers"])
        if head is not None and head.session_id is not None:
            session = self.sessions.find(head, scope) if self.sessions is not None else None
            if session is None:
                await self.app(scope, receive, send)
            else:
                await self._in_session(session, scope, receive, send)
            return
        if head is None or head.routing.version not in _MODERN:
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive)
        plan = None
        if complete:
            plan = self.calls.plan(
                body, routing=head.routing, identity=identity_of(scope), request_id=request_id_of(scope)
            )
        if plan is None:
            await self.app(scope, _replay(body, complete, receive), send)
            return
        await _answer(send, await self.calls.answer(plan))

    async def _in_session(self, session: HandshakeSession, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.sessions is not None
        body, complete = await _read_body(receive)
        if complete and self.sessions.cancels(session, body):
            await self.sessions.accepted(session, send)
            return
        plan = None
        if complete:
            plan = self.calls.plan(
                body,
                handshake_version=session.version,
                log_level=session.log_level,
                identity=identity_of(scope),
                request_id=request_id_of(scope),
            )
        if plan is None:
            await self.app(scope, _replay(body, complete, receive), send)
            return
        await self.sessions.answer(session, plan, send)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body; ``complete`` is False when it is larger than the fast path looks at."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), False
        chunk = message.get("body", b"")
        parts.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), True
        if size > MAX_FAST_BODY:
            return b"".join(parts), False


def _replay(body: bytes, complete: bool, receive: Receive) -> Receive:
    """A ``receive`` that hands the SDK the body already read, then the rest of the stream."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": not complete}
        return await receive()

    return replay


async def _answer(send: Send, body: bytes) -> None:
    headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": http_status(body), "headers": headers})
    await send({"type": "http.response.body", "body": body})
