"""The fast path below ASGI: uvicorn's HTTP protocol answering plain calls itself.

Measured on the fast path inside ASGI, a third of the gateway's CPU per call was the ASGI
machinery around it: uvicorn building the scope and cycle, Starlette's middleware and
router, the receive/send message dicts, two socket writes per response. For a request the
``FastFront`` may take — a 2026-07-28 POST to ``/mcp`` with no session, a ``Content-Length``
within the limits, an allowed ``Host``/``Origin``, and a server with no client
authentication or rate limit configured (those deployments keep the fast path inside ASGI,
behind their checks) — this protocol reads the body, lets ``FastCalls`` plan it, and
writes the answer as one response in one write. Whatever ``FastCalls`` declines runs
through the ASGI app exactly as before, with the body it already read.

This leans on uvicorn's httptools protocol and its request cycle (``_start_asgi_task``,
``body``, ``more_body``, ``message_event``, ``on_response``), checked against the installed
uvicorn at start: where they are missing, plain uvicorn serves and the ASGI fast path
still applies.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_aggregator.serve.client_auth import MCP_PATH
from mcp_aggregator.serve.fast_call import MAX_FAST_BODY, FastCalls, FastPlan
from mcp_aggregator.serve.host_guard import HostPolicy
from mcp_aggregator.settings.serve_settings import ServeSettings

logger = logging.getLogger(__name__)

_MODERN: Final = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)
_HOSTS_REMEMBERED: Final = 64
_OK_HEAD: Final = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
_CYCLE_FIELDS: Final = ("body", "more_body", "message_event", "disconnected", "keep_alive", "flow", "on_response")


class FastFront:
    """Which raw requests the protocol may answer itself, and ``FastCalls`` to answer them."""

    def __init__(self, calls: FastCalls, serve: ServeSettings, policy: HostPolicy) -> None:
        self.calls = calls
        open_server = not serve.mcp_tokens and serve.oauth is None and serve.rate_limit is None
        self.enabled = calls.enabled and open_server
        self._policy = policy
        self._max_body = min(MAX_FAST_BODY, serve.mcp_max_body_bytes)
        # Host values seen allowed: a client sends the same one on every request.
        self._allowed_hosts: set[bytes] = set()

    def takes(self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """Whether a request with this head is one to try; anything unusual goes to ASGI,
        which answers it (and refuses it) as it always has."""
        if not self.enabled or method != "POST" or path != MCP_PATH:
            return False
        version = host = origin = length = None
        for name, value in headers:
            if name == b"mcp-protocol-version":
                version = value
            elif name == b"host":
                host = value
            elif name == b"content-length":
                length = value
            elif name == b"origin":
                origin = value
            elif name in (b"mcp-session-id", b"expect", b"transfer-encoding"):
                return False
        if version not in _MODERN or length is None or not length.isdigit() or int(length) > self._max_body:
            return False
        if host is None:
            return False
        host_text = host.decode("latin-1")
        if host not in self._allowed_hosts:
            if not self._policy.host_allowed(host_text):
                return False
            if len(self._allowed_hosts) < _HOSTS_REMEMBERED:
                self._allowed_hosts.add(host)
        return origin is None or self._policy.origin_allowed(origin.decode("latin-1"), host_text)


def fast_http_protocol(front: FastFront | None) -> Any:
    """The uvicorn ``http`` setting: this protocol bound to ``front``, or ``"auto"``."""
    if front is None or not front.enabled:
        return "auto"
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
    except ImportError:  # httptools is not installed: uvicorn's pure-Python h11 protocol serves
        return "auto"
    if not hasattr(HttpToolsProtocol, "_start_asgi_task") or not _has_cycle_fields(RequestResponseCycle):
        logger.warning("this uvicorn's request cycle is not the one the fast HTTP path knows; it is off")
        return "auto"

    bound = front

    class FastHttpProtocol(HttpToolsProtocol):
        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            scope = cycle.scope
            if app is not self.app or not bound.takes(scope["method"], scope["path"], scope["headers"]):
                super()._start_asgi_task(cycle, app)
                return
            task = self.loop.create_task(_fast_or_asgi(bound, cycle, app, self.server_state.default_headers))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

    return FastHttpProtocol


def _has_cycle_fields(cycle_class: type) -> bool:
    init = getattr(cycle_class, "__init__", None)
    names = getattr(getattr(init, "__code__", None), "co_names", ())
    return all(field in names for field in _CYCLE_FIELDS)


async def _fast_or_asgi(front: FastFront, cycle: Any, app: Any, default_headers: list[tuple[bytes, bytes]]) -> None:
    while cycle.more_body and not cycle.disconnected:
        cycle.flow.resume_reading()
        await cycle.message_event.wait()
        cycle.message_event.clear()
    if cycle.disconnected:
        return
    plan = front.calls.plan(bytes(cycle.body), need_envelope=False)
    if plan is None:
        # The ASGI app reads the body from the cycle as if nobody had looked at it.
        cycle.message_event.set()
        await cycle.run_asgi(app)
        return
    try:
        await _answer(front.calls, plan, cycle, default_headers)
    except Exception:
        logger.exception("fast path: answering tools/call %s failed", plan.tool)
        if not cycle.response_complete:
            cycle.transport.close()


async def _answer(calls: FastCalls, plan: FastPlan, cycle: Any, default_headers: list[tuple[bytes, bytes]]) -> None:
    body = await calls.answer(plan)
    if cycle.disconnected:
        return
    head = [_OK_HEAD]
    for name, value in default_headers:
        head += [name, b": ", value, b"\r\n"]
    if not cycle.keep_alive:
        head.append(b"connection: close\r\n")
    head += [b"content-length: ", str(len(body)).encode(), b"\r\n\r\n", body]
    # One write: headers and body in one segment, which ASGI's two sends never are.
    cycle.transport.write(b"".join(head))
    cycle.response_started = cycle.response_complete = True
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()
    await cycle.flow.drain()
