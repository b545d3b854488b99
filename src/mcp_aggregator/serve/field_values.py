"""Header field values without their optional whitespace (RFC 9110 §5.5).

Leading and trailing spaces and tabs around a field value are not part of it, so
``Mcp-Name:  get_time  `` names ``get_time``. Not every HTTP parser drops them, and the
SDK's endpoint compares ``Mcp-Name`` with the body's name as it arrives, refusing such a
request with -32020; so the HTTP face drops them before anything reads the headers, and
the fast paths read the routing headers the same way (``request_head``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

_OWS: Final = b" \t"


def field_value(value: bytes) -> bytes:
    """``value`` without leading and trailing spaces and tabs."""
    return value.strip(_OWS)


def _padded(value: bytes) -> bool:
    return value[:1] in (b" ", b"\t") or value[-1:] in (b" ", b"\t")


def field_values(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with each value's optional whitespace dropped."""
    return [(name, field_value(value)) for name, value in headers]


class FieldValues:
    """ASGI middleware: an HTTP request's header values reach the app without their
    optional whitespace (the scope is left as it is when none has any)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(_padded(value) for _, value in scope["headers"]):
            scope = {**scope, "headers": field_values(scope["headers"])}
        await self.app(scope, receive, send)
