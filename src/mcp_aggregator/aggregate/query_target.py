"""What the engine needs from an upstream connection to ask it a query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import mcp_types


class QueryTarget(Protocol):
    """An available (CONNECTED or DEGRADED) upstream server.

    ``call_tool`` must raise ``mcp_aggregator.errors.UpstreamError`` subclasses for
    transport and protocol failures, and must tolerate being cancelled: the engine
    enforces timeouts by cancelling the calling scope, which makes the SDK send
    ``notifications/cancelled`` upstream.
    """

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> Sequence[mcp_types.Tool]:
        """The server's current tool list."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult: ...
