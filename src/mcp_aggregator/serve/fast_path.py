"""The passthrough fast path: a plain ``tools/call`` forwarded as raw JSON-RPC.

Most calls through a gateway need nothing but the answer: no progress, no questions back
to the client, no log stream. For those, parsing the request into the SDK's models,
building a result model from the upstream's and serialising it again costs more than the
network hop. This ASGI wrapper sits in front of the SDK's ``/mcp`` endpoint and, for a
2026-07-28 (stateless) ``tools/call`` of a passthrough tool whose upstream session can
take raw calls, reads only what routing needs (``method``, ``id``, ``params.name`` and the
``_meta`` flags), forwards the upstream's answer bytes with the id put back, and answers
with one JSON body. Anything else — a progress token, a log-level opt-in, a client that
declared sampling, elicitation or roots, a retry carrying ``inputResponses``, a body the
fast parser refuses, a tool it cannot route — goes to the SDK endpoint and the full
pipeline unchanged, so behaviour is the same either way; policy stages run on both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
import orjson
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_aggregator.catalog import Catalog
from mcp_aggregator.errors import AggregatorError
from mcp_aggregator.relay import NO_CALLER, Invocation
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.settings import Exposure

logger = logging.getLogger(__name__)

_MODERN: Final = frozenset(v.encode() for v in MODERN_PROTOCOL_VERSIONS)
_ASKING_CAPABILITIES: Final = ("sampling", "elicitation", "roots")
_RESERVED_META: Final = "io.modelcontextprotocol/"
_MAX_BODY: Final = 4 << 20
_RESPONSE_HEAD = re.compile(rb'\A\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*"agw:\d+"')
_JSON_HEADERS: Final = [(b"content-type", b"application/json")]


class FastPath:
    """Wraps the SDK's ``/mcp`` ASGI app; see the module docstring for what it takes."""

    def __init__(self, app: ASGIApp, gateway: ServeGateway) -> None:
        self.app = app
        self.gateway = gateway
        serve = gateway.settings.serve
        self.enabled = serve.fast_path and serve.exposure is Exposure.PASSTHROUGH
        self._catalog: Catalog | None = None
        self._routes: Mapping[str, tuple[str, str]] = {}
        self.forwarded = 0
        """Calls answered by the fast path (the rest went to the SDK endpoint)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        version = _header(scope, b"mcp-protocol-version")
        if version not in _MODERN or _header(scope, b"mcp-session-id") is not None:
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive)
        plan = self._plan(body) if complete else None
        if plan is None:
            await self.app(scope, _replay(body, complete, receive), send)
            return
        self.forwarded += 1
        await _answer(send, await self._forward(*plan))

    def _route(self, name: str) -> tuple[str, str] | None:
        catalog = self.gateway.catalog
        if catalog is not self._catalog:
            # Rebuilt once per catalogue change, never per call.
            routes = {}
            for entry in catalog.entries:
                routes[entry.exposed] = routes[entry.canonical] = (entry.server, entry.original_name)
            self._routes, self._catalog = routes, catalog
        return self._routes.get(name)

    def _plan(self, body: bytes) -> tuple[Any, str, str, dict[str, Any], dict[str, str]] | None:
        """``(client id, server, tool, upstream message, its HTTP headers)`` for a call the fast path takes."""
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None  # the SDK answers with the proper parse error
        if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
            return None
        params = message.get("params")
        if not isinstance(params, dict) or "inputResponses" in params or "requestState" in params:
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta") or {}
        if not isinstance(name, str) or not isinstance(meta, dict) or not isinstance(arguments, dict | None):
            return None
        if "progressToken" in meta or types.LOG_LEVEL_META_KEY in meta:
            return None
        capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY) or {}
        if not isinstance(capabilities, dict) or any(k in capabilities for k in _ASKING_CAPABILITIES):
            return None
        route = self._route(name)
        if route is None:
            return None
        server, tool = route
        supervisor = self.gateway.supervisors.get(server)
        connection = supervisor.connection if supervisor is not None else None
        if connection is None or not connection.raw_capable or server not in self.gateway.exposed_servers():
            return None
        upstream_params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
        kept = {k: v for k, v in meta.items() if not k.startswith(_RESERVED_META)}
        if kept:
            upstream_params["_meta"] = kept
        upstream = {"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": upstream_params}
        headers = connection.stamp(upstream)
        return message["id"], server, tool, upstream, headers

    async def _forward(
        self, client_id: Any, server: str, tool: str, upstream: dict[str, Any], headers: dict[str, str]
    ) -> bytes:
        connection = self.gateway.connection(server)
        invocation = Invocation("tools/call", server, tool, NO_CALLER)
        try:
            line: bytes = await self.gateway.pipeline.through(
                invocation, lambda: connection.call_raw(upstream, headers, what=f"calling tool {tool!r}")
            )
        except AggregatorError as exc:
            logger.warning("tools/call %s failed: %s", tool, exc)
            error = to_mcp_error(exc).error.model_dump(mode="json", exclude_none=True)
            return orjson.dumps({"jsonrpc": "2.0", "id": client_id, "error": error})
        match = _RESPONSE_HEAD.match(line)
        if match is not None and line[match.end() :].lstrip(b" \t\r\n,").startswith(b'"result"'):
            # Only the id changes: the result's bytes go through untouched.
            head = match.group(0)
            return head[: head.rindex(b'"agw:')] + orjson.dumps(client_id) + line[match.end() :]
        answer = orjson.loads(line)
        answer["id"] = client_id
        error = answer.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            # As on the full pipeline: an upstream's error text may quote its own credentials.
            error["message"] = self.gateway.scrub(error["message"])
        return orjson.dumps(answer)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


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
        if size > _MAX_BODY:
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
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
