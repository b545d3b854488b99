"""A live connection seen as a target of the aggregator query."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.upstreams.connection import UpstreamConnection


@dataclass(frozen=True)
class ConnectionTarget:
    connection: UpstreamConnection

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def tools(self) -> Sequence[types.Tool]:
        return self.connection.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.connection.call_tool(name, arguments)
