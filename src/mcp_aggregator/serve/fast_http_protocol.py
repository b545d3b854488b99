"""The fast path below ASGI: uvicorn's HTTP protocol answering plain calls itself.

Measured on the fast path inside ASGI, a third of the gateway's CPU per call was the ASGI
machinery around it: uvicorn building the scope and cycle, Starlette's middleware and
router, the receive/send message dicts, two socket writes per response. For a request the
``FastFront`` may take — a 2026-07-28 POST to ``/mcp`` (or a profile's ``/mcp/<name>``) with
no session, a ``Content-Length`` within the limits, an allowed ``Host``/``Origin``, and a server with no client
authentication or rate limit configured (those deployments keep the fast path inside ASGI,
behind their checks) — this protocol reads the body, lets ``FastCalls`` plan it, and
writes the answer as one response in one write, with the ``X-Request-Id`` ``RequestIds``
would have given it (the client's sane one, else a random one; the audit records it too,
but no access line is written). Whatever ``FastCalls`` declines runs through the ASGI app
exactly as before, with the body it already read.

This leans on uvicorn's httptools protocol and its request cycle (``_start_asgi_task``,
``body``, ``more_body``, ``message_event``, ``on_response``), checked against the installed
uvicorn at start: where they are missing, plain uvicorn serves and the ASGI fast path
still applies.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_aggregator.serve.client_auth import MCP_PATH
from mcp_aggregator.serve.fast_call import MAX_FAST_BODY, FastCalls, FastPlan, http_status
from mcp_aggregator.serve.host_guard import HostPolicy
from mcp_aggregator.serve.request_head import RequestHead, read_head
from mcp_aggregator.serve.request_ids import is_sane, new_request_id
from mcp_aggregator.settings.serve_settings import ServeSettings

logger = logging.getLogger(__name__)

_MODERN: Final = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)
_HOSTS_REMEMBERED: Final = 64
_OK_HEAD: Final = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
_ERROR_HEADS: Final = {
    400: b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n",
    404: b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n",
}
_CYCLE_FIELDS: Final = ("body", "more_body", "message_event", "disconnected", "keep_alive", "flow", "on_response")
_LINE_START: Final = b"POST " + MCP_PATH.encode()
_MAX_LINE: Final = 256
_MAX_HEAD: Final = 16 * 1024
_SMALL_BODY: Final = 64 * 1024
_HELD_LIMIT: Final = 1 << 20
# Header lines as RFC 9110 has them: a token, a colon, a value of visible characters, spaces
# and tabs (obs-text allowed). Anything else (folded lines, bare CR or LF, control bytes) is
# left to uvicorn's parser, which refuses it as it always has.
_TOKEN: Final = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_VALUE: Final = rb"[^\x00-\x08\x0a-\x1f\x7f]*"
_HEAD: Final = re.compile(rb"(?:" + _TOKEN + rb":" + _VALUE + rb"\r\n)*")
_FIELD: Final = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + _VALUE + rb"?)[ \t]*\r\n")
# At a line's start (the block starts with a header line and each one ends in CRLF).
_CONTENT_LENGTH: Final = re.compile(rb"(?:^|(?<=\n))content-length:[ \t]*([0-9]{1,15})[ \t]*\r\n", re.IGNORECASE)
_HEADS_REMEMBERED: Final = 256
_TAKEN: Final = object()
_INCOMPLETE: Final = object()


class FastFront:
    """Which raw requests the protocol may answer itself, and ``FastCalls`` to answer them."""

    def __init__(
        self, calls: Mapping[str, FastCalls], serve: ServeSettings, policy: HostPolicy, *, clients: bool = False
    ) -> None:
        self.by_path = {path: found for path, found in calls.items() if found.enabled}
        """The fast calls of each MCP endpoint (``/mcp``, ``/mcp/<profile>``)."""
        self.by_line = {b"POST " + path.encode() + b" HTTP/1.1\r\n": found for path, found in self.by_path.items()}
        open_server = not serve.mcp_tokens and not clients and serve.oauth is None and serve.rate_limit is None
        self.enabled = bool(self.by_path) and open_server
        self._policy = policy
        self._max_body = min(MAX_FAST_BODY, serve.mcp_max_body_bytes)
        # Host values seen allowed: a client sends the same one on every request.
        self._allowed_hosts: set[bytes] = set()
        self._heads: dict[bytes, RequestHead | None] = {}

    def takes(self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]]) -> RequestHead | None:
        """The head of a request to try, or None; anything unusual goes to ASGI, which
        answers it (and refuses it) as it always has."""
        if not self.enabled or method != "POST" or path not in self.by_path:
            return None
        return self._head(headers)

    def _head(self, headers: Iterable[tuple[bytes, bytes]]) -> RequestHead | None:
        head = read_head(headers)
        if head is None or head.framed or head.routing.version not in _MODERN or head.host is None:
            return None
        if head.session_id is not None:  # a handshake-era session's: the ASGI path knows them
            return None
        length = head.content_length
        if length is None or not length.isdigit() or int(length) > self._max_body:
            return None
        host = head.host
        host_text = host.decode("latin-1")
        if host not in self._allowed_hosts:
            if not self._policy.host_allowed(host_text):
                return None
            if len(self._allowed_hosts) < _HOSTS_REMEMBERED:
                self._allowed_hosts.add(host)
        if head.origin is not None and not self._policy.origin_allowed(head.origin.decode("latin-1"), host_text):
            return None
        if head.request_id is not None and not is_sane(head.request_id):
            return replace(head, request_id=None)  # as ``RequestIds`` does: a random one instead
        return head

    @staticmethod
    def request_id(head: RequestHead) -> str:
        """The request's id, as ``RequestIds`` makes it in ASGI: the client's sane one, else random."""
        return new_request_id() if head.request_id is None else head.request_id.decode("ascii")

    def raw_head(self, block: bytes) -> tuple[RequestHead, int] | None:
        """The head of a request read off the socket (its header lines, each ending in CRLF)
        and its body's length, or None when uvicorn's parser must take the request.

        A client sends the same header lines on every call to a tool but for
        ``Content-Length``: the verdict on the rest is remembered, so a repeated head costs
        one search and one lookup instead of a parse. (A remembered head's ``content_length``
        is its first request's; the length returned beside it is this one's.)"""
        found = _CONTENT_LENGTH.search(block)
        if found is None:
            return None
        length = int(found.group(1))
        if length > self._max_body:
            return None
        key = block[: found.start()] + block[found.end() :]
        if key in self._heads:
            head = self._heads[key]
        else:
            head = None
            if _HEAD.fullmatch(block) is not None:
                head = self._head([(n.lower(), v) for n, v in _FIELD.findall(block)])
            if len(self._heads) < _HEADS_REMEMBERED:
                self._heads[key] = head
        return None if head is None else (head, length)


def fast_http_protocol(front: FastFront | None) -> Any:
    """The uvicorn ``http`` setting: this protocol bound to ``front``, or ``"auto"``."""
    if front is None or not front.enabled:
        return "auto"
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
    except ImportError:  # httptools is not installed: uvicorn's pure-Python h11 protocol serves
        return "auto"
    if not _knows(HttpToolsProtocol, RequestResponseCycle):
        logger.warning("this uvicorn's HTTP protocol is not the one the fast HTTP path knows; it is off")
        return "auto"

    bound = front

    class FastHttpProtocol(HttpToolsProtocol):
        """Reads a plain call's request itself where it can (see ``_RawRequests``); every
        other byte goes to uvicorn's parser, whose requests may still take the fast path
        through ``_start_asgi_task``."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.raw = _RawRequests(self, bound)
            self.parsing = False
            """uvicorn's parser is inside a request: the bytes that follow are its."""

        def data_received(self, data: bytes) -> None:
            self.raw.received(data)

        def parser_data_received(self, data: bytes) -> None:
            super().data_received(data)

        def on_message_begin(self) -> None:
            self.parsing = True
            super().on_message_begin()

        def on_message_complete(self) -> None:
            self.parsing = False
            super().on_message_complete()

        def shutdown(self) -> None:
            if not self.raw.shutdown():
                super().shutdown()

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            scope = cycle.scope
            head = bound.takes(scope["method"], scope["path"], scope["headers"]) if app is self.app else None
            if head is None:
                super()._start_asgi_task(cycle, app)
                return
            calls = bound.by_path[scope["path"]]
            task = self.loop.create_task(_fast_or_asgi(calls, head, cycle, app, self.server_state.default_headers))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

    return FastHttpProtocol


def _knows(protocol_class: type, cycle_class: type) -> bool:
    init = getattr(cycle_class, "__init__", None)
    names = getattr(getattr(init, "__code__", None), "co_names", ())
    methods = ("_start_asgi_task", "on_message_begin", "on_message_complete", "on_response_complete", "shutdown")
    return all(field in names for field in _CYCLE_FIELDS) and all(hasattr(protocol_class, m) for m in methods)


class _RawRequests:
    """A plain call's HTTP request read straight from the socket's bytes, for one connection.

    uvicorn's parser calls back into Python for the start of a message, the URL, every
    header, the body and the end, then builds an ASGI scope and a request cycle: for a
    small call that was a third of the gateway's work. Here a request that starts with
    ``POST /mcp HTTP/1.1`` (or a profile's path), whose head is well-formed (checked by one
    regular expression) and whose ``Content-Length`` body is complete, is planned and answered directly. The
    parser sees nothing of it; it gets every other request whole, and the connection's
    bytes stay in order: while a raw call is answered, what arrives next is held and then
    read as if it had just come. A request ``FastCalls`` declines is handed to the parser
    as received, so the SDK's endpoint answers it.
    """

    def __init__(self, protocol: Any, front: FastFront) -> None:
        self.protocol = protocol
        self.front = front
        self.held = b""
        self.busy = False
        self.close_after = False

    def received(self, data: bytes) -> None:
        protocol = self.protocol
        protocol._unset_keepalive_if_required()
        if self.busy:
            self.held += data
            if len(self.held) > _HELD_LIMIT:
                protocol.flow.pause_reading()
            return
        if self.held:
            data, self.held = self.held + data, b""
        cycle = protocol.cycle
        if (
            protocol.parsing
            or protocol.pipeline
            or (cycle is not None and not cycle.response_complete)
            or protocol.limit_concurrency is not None
        ):
            protocol.parser_data_received(data)
            return
        taken = self._take(data)
        if taken is None:
            protocol.parser_data_received(data)
        elif taken is _INCOMPLETE:
            self.held = data

    def _take(self, data: bytes) -> object | None:
        """Start answering the request ``data`` begins with: ``_TAKEN`` (bytes after it are
        held), ``_INCOMPLETE`` (wait for more), or None (the parser's)."""
        line_end = data.find(b"\r\n", 0, _MAX_LINE) + 2
        if line_end < 2:
            waiting = len(data) < _MAX_LINE and (data.startswith(_LINE_START) or _LINE_START.startswith(data))
            return _INCOMPLETE if waiting else None
        calls = self.front.by_line.get(data[:line_end])
        if calls is None:
            return None
        end = data.find(b"\r\n\r\n", line_end - 2)
        if end < 0:
            return _INCOMPLETE if len(data) < _MAX_HEAD else None
        taken = self.front.raw_head(data[line_end : end + 2])
        if taken is None:
            return None
        head, length = taken
        body_end = end + 4 + length
        if len(data) < body_end:
            # Held bytes are joined again per arrival: only a small body is waited for here.
            return _INCOMPLETE if body_end <= _MAX_HEAD + _SMALL_BODY else None
        request_id = self.front.request_id(head)
        plan = calls.plan(data[end + 4 : body_end], routing=head.routing, request_id=request_id)
        if plan is None:
            return None
        self.busy = True
        self.held = data[body_end:]
        keep_alive = head.keep_alive
        # Over a stdio upstream the answer comes from the pipe reader's callback, with no
        # task per call; otherwise a task awaits it.
        if calls.answer_soon(plan, lambda body: self._delivered(body, keep_alive, request_id)) is None:
            self._spawn(self._answer(calls, plan, keep_alive, request_id))
        return _TAKEN

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        protocol = self.protocol
        task = protocol.loop.create_task(work)
        task.add_done_callback(protocol.tasks.discard)
        protocol.tasks.add(task)

    def _delivered(self, body: bytes, keep_alive: bool, request_id: str) -> None:
        if not self._respond(body, keep_alive, request_id):
            return
        if self.protocol.flow.write_paused:
            self._spawn(self._drained())
        else:
            self._next()

    async def _drained(self) -> None:
        await self.protocol.flow.drain()
        self._next()

    async def _answer(self, calls: FastCalls, plan: FastPlan, keep_alive: bool, request_id: str) -> None:
        try:
            body = await calls.answer(plan)
        except Exception:
            logger.exception("fast path: answering %s failed", plan.label, extra={"request_id": request_id})
            self.busy = False
            self.protocol.transport.close()
            return
        if self._respond(body, keep_alive, request_id):
            await self._drained()

    def _respond(self, body: bytes, keep_alive: bool, request_id: str) -> bool:
        """Write the answer; whether the connection goes on. Called back without a task
        (``_delivered``), the next request is read at once unless the client is not reading
        its answers: then a task waits for it to."""
        self.busy = False
        protocol = self.protocol
        transport = protocol.transport
        if transport.is_closing():
            return False
        keep_alive = keep_alive and not self.close_after
        transport.write(_response(body, protocol.server_state.default_headers, keep_alive, request_id))
        if not keep_alive:
            transport.close()
        # uvicorn's own bookkeeping after a response: the request count, reading resumed,
        # the keep-alive timer armed (the next request's bytes disarm it).
        protocol.on_response_complete()
        return True

    def _next(self) -> None:
        """Read what arrived while the answer was pending, as if it had just come."""
        if self.held and not self.protocol.transport.is_closing():
            data, self.held = self.held, b""
            self.received(data)

    def shutdown(self) -> bool:
        """On a graceful shutdown: whether a raw call is being answered (the connection
        then closes after its answer)."""
        self.close_after = True
        return self.busy


def _response(body: bytes, default_headers: list[tuple[bytes, bytes]], keep_alive: bool, request_id: str) -> bytes:
    status = http_status(body)
    head = [_OK_HEAD if status == 200 else _ERROR_HEADS.get(status, _OK_HEAD)]
    for name, value in default_headers:
        head += [name, b": ", value, b"\r\n"]
    head += [b"x-request-id: ", request_id.encode(), b"\r\n"]
    if not keep_alive:
        head.append(b"connection: close\r\n")
    head += [b"content-length: ", str(len(body)).encode(), b"\r\n\r\n", body]
    # One write: headers and body in one segment, which ASGI's two sends never are.
    return b"".join(head)


async def _fast_or_asgi(
    calls: FastCalls, head: RequestHead, cycle: Any, app: Any, default_headers: list[tuple[bytes, bytes]]
) -> None:
    while cycle.more_body and not cycle.disconnected:
        cycle.flow.resume_reading()
        await cycle.message_event.wait()
        cycle.message_event.clear()
    if cycle.disconnected:
        return
    request_id = FastFront.request_id(head)
    plan = calls.plan(bytes(cycle.body), routing=head.routing, request_id=request_id)
    if plan is None:
        # The ASGI app reads the body from the cycle as if nobody had looked at it.
        cycle.message_event.set()
        await cycle.run_asgi(app)
        return
    try:
        body = await calls.answer(plan)
        if cycle.disconnected:
            return
        cycle.transport.write(_response(body, default_headers, cycle.keep_alive, request_id))
        cycle.response_started = cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            cycle.transport.close()
        cycle.on_response()
        await cycle.flow.drain()
    except Exception:
        logger.exception("fast path: answering %s failed", plan.label, extra={"request_id": request_id})
        if not cycle.response_complete:
            cycle.transport.close()
