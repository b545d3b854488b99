"""What may go upstream, and how a failure is worded: checks and descriptions shared by the
upstream sessions and the relay, with no session state."""

from __future__ import annotations

from typing import Final, cast

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from mcp_aggregator.errors import InvalidInputError

SDK_CLOSED: Final = ("Connection closed", "SSE stream ")
"""How the SDK's client words the error of a request whose transport (or, over HTTP, whose
event stream) ended; the second is a prefix."""


def _text_field_error(value: object, path: str) -> tuple[str, str] | None:
    """The first string under ``value`` that cannot be encoded as UTF-8 (a lone surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path or "arguments", f"not valid Unicode text (lone surrogate at index {exc.start})"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _text_field_error(key, path) or _text_field_error(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if found := _text_field_error(item, f"{path}[{i}]"):
                return found
    return None


_RESERVED_META = "io.modelcontextprotocol/"
_PASSED_TO_MODERN: Final = frozenset((types.LOG_LEVEL_META_KEY, types.CLIENT_CAPABILITIES_META_KEY))


def upstream_meta(meta: types.RequestParamsMeta | None, *, modern: bool) -> types.RequestParamsMeta | None:
    """A client's ``_meta`` as it may go upstream.

    The client's protocol envelope (version, capabilities, client info) describes the
    client's own connection, not ours, and a 2025-11-25 upstream refuses a request that
    carries it; each side negotiates on its own. Everything else (``progressToken``,
    application keys) passes, and so do, to a 2026-07-28 upstream, the log-level opt-in and
    the caller's capabilities (the session's stamp narrows its own to them:
    ``caller_capabilities``).
    """
    if not meta:
        return meta
    kept = {
        key: value
        for key, value in meta.items()
        if not key.startswith(_RESERVED_META) or (modern and key in _PASSED_TO_MODERN)
    }
    return cast(types.RequestParamsMeta, kept) if kept else None


def check_encodable(value: object, path: str) -> None:
    """Refuse a value that cannot be sent as JSON text, before it reaches a shared session.

    A lone surrogate passes JSON parsing but fails to encode on the way out; inside the
    SDK's writer that failure closes the whole session, failing every other client's call.
    Raises ``InvalidInputError`` naming the field.
    """
    found = _text_field_error(value, path)
    if found is not None:
        raise InvalidInputError(*found)


def closed_by_transport(exc: MCPError) -> bool:
    """Whether the SDK's client raised ``exc`` because the transport ended. An upstream's own
    error may carry the same code (-32000 opens JSON-RPC's server-error range, and servers
    use it for their failures): that one is the call's error, not the session's end."""
    return exc.error.code == CONNECTION_CLOSED and exc.error.message.startswith(SDK_CLOSED)


def describe_error(exc: BaseException) -> str:
    """A one-line, human description of a (possibly grouped) transport error."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return "connection closed" if closed_by_transport(exc) else exc.error.message
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
