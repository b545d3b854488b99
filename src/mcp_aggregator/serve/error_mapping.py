"""The one place where gateway errors become JSON-RPC errors for MCP clients."""

from __future__ import annotations

from typing import Final

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from mcp_aggregator.errors import (
    AggregationFailedError,
    AggregatorError,
    AmbiguousToolError,
    FacadeError,
    InvalidInputError,
    InvalidQueryError,
    PolicyDeniedError,
    RoutingError,
    ServerNotFoundError,
    StateError,
    ToolHeldError,
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamError,
    UpstreamTimeoutError,
)

# Server-defined codes from the JSON-RPC reserved range; -32000 is avoided because the
# SDK uses it client-side for "connection closed".
SERVER_UNAVAILABLE: Final = -32003
UPSTREAM_TIMEOUT: Final = -32004
TOOL_HELD: Final = -32006
POLICY_DENIED: Final = -32007


def to_mcp_error(exc: AggregatorError) -> MCPError:
    """Map an error from the gateway core onto the JSON-RPC error a client sees."""
    if isinstance(exc, InvalidQueryError):
        return MCPError(INVALID_PARAMS, "Invalid query parameters", {"field": exc.field, "reason": exc.reason})
    if isinstance(exc, AggregationFailedError):
        return MCPError(INTERNAL_ERROR, str(exc), {"attemptedServers": exc.attempted, "errors": exc.errors})
    if isinstance(exc, InvalidInputError):
        return MCPError(INVALID_PARAMS, str(exc), {"field": exc.field, "reason": exc.reason})
    if isinstance(exc, ToolHeldError):
        return MCPError(TOOL_HELD, str(exc), {"server": exc.server, "tool": exc.tool, "reason": exc.reason})
    if isinstance(exc, PolicyDeniedError):
        return MCPError(POLICY_DENIED, str(exc), {"rule": exc.rule, "tool": exc.tool})
    if isinstance(exc, AmbiguousToolError):
        return MCPError(INVALID_PARAMS, str(exc), {exc.kind: exc.name, "servers": exc.servers})
    if isinstance(exc, RoutingError | ServerNotFoundError | FacadeError):
        return MCPError(INVALID_PARAMS, str(exc))
    if isinstance(exc, UpstreamCallError):
        return MCPError(exc.code, str(exc), exc.data)
    if isinstance(exc, UpstreamTimeoutError):
        return MCPError(UPSTREAM_TIMEOUT, str(exc), {"server": exc.server})
    if isinstance(exc, UpstreamClosedError):
        return MCPError(SERVER_UNAVAILABLE, str(exc), {"server": exc.server})
    if isinstance(exc, StateError):
        data = {"server": getattr(exc, "server", None), "status": getattr(exc, "state", None)}
        return MCPError(SERVER_UNAVAILABLE, str(exc), data)
    if isinstance(exc, UpstreamError):
        return MCPError(SERVER_UNAVAILABLE, str(exc), {"server": exc.server})
    return MCPError(INTERNAL_ERROR, str(exc))
