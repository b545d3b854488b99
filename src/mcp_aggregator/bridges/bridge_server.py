"""``BridgeServer``: what every bridge's in-process MCP server shares.

A bridge reads its source (an OpenAPI document, an agent card) once at connect; each
``tools/list`` after that reads it again, so a changed source reaches the pins and one that
can no longer be read fails the health check like any upstream's listing would.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator import __version__
from mcp_aggregator.errors import BridgeError


class BridgeServer(ABC):
    """A bridge's tools, kept current, and the server that offers them."""

    name: str
    _fresh: bool
    """Set by ``load``: the first listing after it needs no second read."""

    @abstractmethod
    async def load(self) -> None:
        """Read the source again; raises ``BridgeError`` naming the setting or document path."""

    @abstractmethod
    def _instructions(self) -> str: ...

    @abstractmethod
    def _listed_tools(self) -> list[types.Tool]: ...

    @abstractmethod
    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult: ...

    def server(self) -> Server[Any]:
        return Server(
            self.name,
            version=__version__,
            instructions=self._instructions(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if not self._fresh:
            try:
                await self.load()
            except BridgeError as exc:
                raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc
        self._fresh = False
        return types.ListToolsResult(tools=self._listed_tools())
