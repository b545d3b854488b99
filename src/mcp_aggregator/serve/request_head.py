"""What the HTTP fast paths read of a request's head, and when they leave it to the SDK.

The SDK's streamable-HTTP endpoint checks a 2026-07-28 request's routing headers against
its body (``Mcp-Protocol-Version`` against the envelope, ``Mcp-Method`` against the method,
``Mcp-Name`` against the tool name) and refuses a routing header given twice. A fast path
that skipped those checks would answer requests the SDK refuses, and a client could tell
the two apart; so the fast paths read the same headers, and anything doubtful (a routing
header given twice, ``Mcp-Param-*`` headers, an upgrade) goes to the SDK,
which answers it as it always has (``FastCalls.plan`` also leaves it a call to a tool that
mirrors arguments into such headers, whose absence the SDK refuses). Below ASGI, a chunked body or one that waits for
``100 Continue`` is left to uvicorn too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from mcp_aggregator.serve.field_values import field_value

_READ: Final = frozenset(
    {
        b"mcp-protocol-version",
        b"mcp-method",
        b"mcp-name",
        b"host",
        b"origin",
        b"content-length",
        b"connection",
        b"mcp-session-id",
        b"accept",
        b"content-type",
        b"x-request-id",
    }
)
_ROUTING: Final = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")
_LEFT_TO_THE_SDK: Final = frozenset({b"upgrade"})
_BODY_FRAMING: Final = frozenset({b"expect", b"transfer-encoding"})
_PARAM_HEADER: Final = b"mcp-param-"


@dataclass(frozen=True, slots=True)
class Routing:
    """A request's routing headers as sent, without optional whitespace (None where absent),
    for ``FastCalls.plan`` to hold against the body as the SDK's inbound checks do."""

    version: bytes | None
    method: bytes | None
    name: bytes | None


@dataclass(frozen=True, slots=True)
class RequestHead:
    """The headers a fast path reads, each given at most once."""

    routing: Routing
    host: bytes | None
    origin: bytes | None
    content_length: bytes | None
    keep_alive: bool
    framed: bool
    """The body is chunked or waits for ``100 Continue``: only ASGI, which has read it, can take it."""
    session_id: bytes | None = None
    """A handshake-era session's id (such a request is taken only on the ASGI path)."""
    accept: bytes | None = None
    content_type: bytes | None = None
    request_id: bytes | None = None
    """``X-Request-Id`` as sent: below ASGI, where ``RequestIds`` does not run, the fast path
    keeps a sane one as the request's id (``FastFront``)."""


def read_head(headers: Iterable[tuple[bytes, bytes]]) -> RequestHead | None:
    """``headers`` (lower-case names) as a fast path reads them, or None when the request
    must go to the SDK's endpoint (see the module docstring)."""
    seen: dict[bytes, bytes] = {}
    framed = False
    for name, value in headers:
        if name in _READ:
            if name in seen:
                return None
            seen[name] = value
        elif name in _BODY_FRAMING:
            framed = True
        elif name in _LEFT_TO_THE_SDK or name.startswith(_PARAM_HEADER):
            return None
    connection = seen.get(b"connection")
    keep_alive = connection is None or b"close" not in [t.strip() for t in connection.lower().split(b",")]
    routing = Routing(*(None if (v := seen.get(n)) is None else field_value(v) for n in _ROUTING))
    host, origin, length = seen.get(b"host"), seen.get(b"origin"), seen.get(b"content-length")
    return RequestHead(
        routing,
        host,
        origin,
        length,
        keep_alive,
        framed,
        seen.get(b"mcp-session-id"),
        seen.get(b"accept"),
        seen.get(b"content-type"),
        seen.get(b"x-request-id"),
    )
