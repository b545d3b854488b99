"""Real upstream MCP servers for the engine tests, and a ``QueryTarget`` adapter over
``mcp.Client`` that maps SDK errors to the gateway's ``UpstreamError`` tree."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError

STDIO_SERVER_SCRIPT = Path(__file__).with_name("stdio_search_server.py")

UpstreamServer = MCPServer | StdioServerParameters


class ClientTarget:
    """A connected ``Client`` seen as a ``QueryTarget``."""

    def __init__(self, name: str, client: Client, tools: Sequence[mcp_types.Tool]) -> None:
        self.name = name
        self.tools = list(tools)
        self.client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        self.calls.append((name, arguments))
        try:
            return await self.client.call_tool(name, arguments)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise UpstreamClosedError(self.name, "connection closed") from exc
            raise UpstreamCallError(self.name, exc.message, code=exc.code, data=exc.data) from exc


@asynccontextmanager
async def connect_targets(
    servers: Mapping[str, UpstreamServer], *, mode: str = "auto"
) -> AsyncIterator[list[ClientTarget]]:
    """Connect to every server (in this task, closed in this task) and yield the targets."""
    async with AsyncExitStack() as stack:
        targets: list[ClientTarget] = []
        for name, server in servers.items():
            client = await stack.enter_async_context(Client(server, mode=mode, cache=None))
            listed = await client.list_tools()
            targets.append(ClientTarget(name, client, listed.tools))
        yield targets


def stdio_params(mode: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(STDIO_SERVER_SCRIPT), mode])


def list_server(name: str, docs: Sequence[str]) -> MCPServer:
    """``search(query)`` returns ``docs`` as a list (one text block per document)."""
    app = MCPServer(name)

    @app.tool()
    def search(query: str) -> list[str]:
        """Search the index."""
        return list(docs)

    return app


def json_server(name: str, items: Sequence[Mapping[str, Any]]) -> MCPServer:
    """``find_documents(q)`` returns ``{"results": items}`` as one JSON text block."""
    app = MCPServer(name)

    @app.tool(structured_output=False)
    def find_documents(q: str) -> str:
        """Find documents."""
        return json.dumps({"results": list(items), "total": len(items)})

    return app


def hanging_server(name: str, cancelled: anyio.Event | None = None) -> MCPServer:
    """``search`` waits on an event nobody sets: it only ends when cancelled, and then
    sets ``cancelled``."""
    app = MCPServer(name)

    @app.tool()
    async def search(query: str) -> str:
        """Never answers."""
        try:
            await anyio.Event().wait()
        finally:
            if cancelled is not None:
                cancelled.set()
        return "unreachable"

    return app


def tool_error_server(name: str, message: str) -> MCPServer:
    """``search`` answers with ``isError`` and ``message``."""
    app = MCPServer(name)

    @app.tool()
    def search(query: str) -> str:
        """Always fails."""
        raise ToolError(message)

    return app


def protocol_error_server(name: str, message: str) -> MCPServer:
    """``search`` answers with a JSON-RPC error."""
    app = MCPServer(name)

    @app.tool()
    def search(query: str) -> str:
        """Always refuses."""
        raise MCPError(-32001, message)

    return app


def calculator_server(name: str) -> MCPServer:
    """No tool takes free text."""
    app = MCPServer(name)

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return app


def recording_server(name: str, seen: list[dict[str, Any]]) -> MCPServer:
    """``lookup(topic, limit)`` records its arguments and echoes the topic."""
    app = MCPServer(name)

    @app.tool()
    def lookup(topic: str, limit: int = 5) -> list[str]:
        """Look a topic up."""
        seen.append({"topic": topic, "limit": limit})
        return [f"entry about {topic}"]

    return app
