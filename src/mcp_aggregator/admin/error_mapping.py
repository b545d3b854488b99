"""The one place where gateway errors become HTTP status codes and bodies.

Bodies are ``{"detail": ...}`` like FastAPI's own errors: a string where the contract
gives one (409 "Server already exists: {name}", 404), an object where a client needs the
parts (422 query ``{field, reason}``, 502 aggregation, 503 ``{server, status}``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.requests import Request

from mcp_aggregator.errors import (
    AggregationFailedError,
    AggregatorError,
    AmbiguousToolError,
    ConfigError,
    FacadeError,
    InvalidQueryError,
    LimitExceededError,
    RegistryError,
    RoutingError,
    SearchError,
    ServerExistsError,
    ServerNotFoundError,
    ServerUnavailableError,
    StateError,
    UpstreamCallError,
    UpstreamError,
    UpstreamTimeoutError,
)


def http_error(exc: AggregatorError) -> tuple[int, Any]:
    """``(status code, detail)`` for an error raised by the gateway core. Pure."""
    if isinstance(exc, ServerExistsError):
        return 409, str(exc)
    if isinstance(exc, ServerNotFoundError | RoutingError):
        return _routing_error(exc)
    if isinstance(exc, LimitExceededError | ConfigError | FacadeError):
        return 422, str(exc)
    if isinstance(exc, InvalidQueryError):
        return 422, {"field": exc.field, "reason": exc.reason}
    if isinstance(exc, AggregationFailedError):
        return 502, {"message": str(exc), "attemptedServers": exc.attempted, "errors": exc.errors}
    if isinstance(exc, ServerUnavailableError):
        return 503, {"message": str(exc), "server": exc.server, "status": exc.state}
    if isinstance(exc, StateError):
        return 409, str(exc)
    if isinstance(exc, UpstreamError):
        return _upstream_error(exc)
    if isinstance(exc, RegistryError | SearchError):
        return 503, str(exc)
    return 500, str(exc)


def _routing_error(exc: AggregatorError) -> tuple[int, Any]:
    if isinstance(exc, AmbiguousToolError):
        return 409, {"message": str(exc), "tool": exc.name, "servers": exc.servers}
    return 404, str(exc)


def _upstream_error(exc: UpstreamError) -> tuple[int, Any]:
    if isinstance(exc, UpstreamCallError):
        return 502, {"message": str(exc), "server": exc.server, "code": exc.code, "data": exc.data}
    if isinstance(exc, UpstreamTimeoutError):
        return 504, {"message": str(exc), "server": exc.server}
    # Connect failures and closed sessions: the upstream is not there to serve (EC-003).
    return 503, {"message": str(exc), "server": exc.server}


async def _handle(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AggregatorError)
    status, detail = http_error(exc)
    return JSONResponse({"detail": detail}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    """Route every ``AggregatorError`` escaping a handler through ``http_error``."""
    app.add_exception_handler(AggregatorError, _handle)
