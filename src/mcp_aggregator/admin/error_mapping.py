"""The one place where gateway errors become HTTP status codes and bodies.

Bodies are ``{"detail": ...}`` like FastAPI's own errors: a string where the contract
gives one (409 "Server already exists: {name}", 404), an object where a client needs the
parts (422 query ``{field, reason}``, 502 aggregation, 503 ``{server, status}``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import Request

from mcp_aggregator.errors import (
    AggregationFailedError,
    AggregatorError,
    AmbiguousToolError,
    ConfigError,
    EntryInvalidError,
    EntryNotFoundError,
    FacadeError,
    InstallError,
    InstallInputError,
    InvalidInputError,
    InvalidQueryError,
    LimitExceededError,
    PolicyDeniedError,
    RegistryError,
    RegistryUnreachableError,
    RoutingError,
    SearchError,
    ServerExistsError,
    ServerNotFoundError,
    ServerUnavailableError,
    StateError,
    ToolHeldError,
    UpstreamCallError,
    UpstreamError,
    UpstreamTimeoutError,
)


def http_error(exc: AggregatorError) -> tuple[int, Any]:
    """``(status code, detail)`` for an error raised by the gateway core. Pure."""
    if isinstance(exc, ServerExistsError):
        return 409, str(exc)
    if isinstance(exc, InstallError):
        return _install_error(exc)
    if isinstance(exc, ToolHeldError):
        return 409, {"message": str(exc), "server": exc.server, "tool": exc.tool, "reason": exc.reason}
    if isinstance(exc, PolicyDeniedError):
        return 403, {"message": str(exc), "rule": exc.rule, "tool": exc.tool}
    if isinstance(exc, ServerNotFoundError | RoutingError):
        return _routing_error(exc)
    if isinstance(exc, LimitExceededError | ConfigError | FacadeError):
        return 422, str(exc)
    if isinstance(exc, InvalidQueryError | InvalidInputError):
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


def _install_error(exc: InstallError) -> tuple[int, Any]:
    if isinstance(exc, EntryNotFoundError):
        return 404, str(exc)
    if isinstance(exc, EntryInvalidError):
        return 422, {"message": str(exc), "field": exc.field, "reason": exc.reason}
    if isinstance(exc, InstallInputError):
        missing = [{**asdict(m), "choices": list(m.choices) or None} for m in exc.missing]
        return 422, {"message": str(exc), "problems": exc.problems, "missing": missing}
    if isinstance(exc, RegistryUnreachableError):
        return 502, str(exc)
    return 409, str(exc)


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


def validation_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """FastAPI's 422 list, each message naming its field, inputs dropped (they may be secrets)."""
    out = []
    for err in errors:
        loc = [str(part) for part in err["loc"]]
        field = ".".join(loc[1:] if loc[:1] in (["body"], ["query"], ["path"]) else loc)
        msg = str(err["msg"])
        out.append({"type": err["type"], "loc": err["loc"], "msg": f"{field}: {msg}" if field else msg})
    return out


async def _handle_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": validation_errors(exc.errors())}, status_code=422)


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AggregatorError)
    status, detail = http_error(exc)
    # Error texts can quote upstream output and URLs; the servers' secrets never leave.
    return JSONResponse({"detail": _scrubbed(detail, request.app.state.gateway.scrub)}, status_code=status)


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {key: _scrubbed(item, scrub) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, scrub) for item in value]
    return value


def install_error_handlers(app: FastAPI) -> None:
    """Route every ``AggregatorError`` through ``http_error``, and 422s through ``validation_errors``."""
    app.add_exception_handler(AggregatorError, _handle)
    app.add_exception_handler(RequestValidationError, _handle_validation)
