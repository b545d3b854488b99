"""Real upstream MCP servers for the engine tests, and a ``QueryTarget`` adapter over
``mcp.Client`` that maps SDK errors to the gateway's ``UpstreamError`` tree."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

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


class TaskOnlyServer(MCPServer):
    """An ``MCPServer`` that declares some of its tools ``execution.taskSupport: required``
    (the high-level decorator cannot say so), like server-everything's research tool."""

    def __init__(self, name: str, task_only: Sequence[str]) -> None:
        super().__init__(name)
        self._task_only = set(task_only)

    async def list_tools(self) -> list[mcp_types.Tool]:
        tools = []
        for listed in await super().list_tools():
            if listed.name in self._task_only:
                listed = listed.model_copy(update={"execution": mcp_types.ToolExecution(task_support="required")})
            tools.append(listed)
        return tools


def dangerous_server(name: str, called: list[str], *, with_safe_search: bool = True) -> MCPServer:
    """Tools the aggregator must never call — ``delete_everything(query)``, a task-only
    ``search_deep(query)``, ``send_message(text)``, an annotated ``search_and_purge`` — and,
    with ``with_safe_search``, a read-only ``find_notes(query)``. Every call is recorded."""
    app = TaskOnlyServer(name, task_only=["search_deep"])

    @app.tool()
    def delete_everything(query: str) -> str:
        """Delete every note matching the query."""
        called.append("delete_everything")
        return "deleted"

    @app.tool()
    def search_deep(query: str) -> str:
        """Research a question in depth (runs as a task)."""
        called.append("search_deep")
        return "research notes about hooks"

    @app.tool()
    def send_message(text: str) -> str:
        """Send a message to the team channel."""
        called.append("send_message")
        return "sent"

    @app.tool(annotations=mcp_types.ToolAnnotations(destructive_hint=True))
    def search_and_purge(query: str) -> str:
        """Search notes and purge the matches."""
        called.append("search_and_purge")
        return "purged"

    if with_safe_search:

        @app.tool(annotations=mcp_types.ToolAnnotations(read_only_hint=True))
        def find_notes(query: str) -> list[str]:
            """Find notes whose text matches the query."""
            called.append("find_notes")
            return ["note: React hooks replace class lifecycle methods"]

    return app


def literal_server(name: str, docs: Sequence[str], seen: list[str]) -> MCPServer:
    """``search(query)`` returns the docs containing the query as a substring (any case),
    like many real search tools; records every query."""
    app = MCPServer(name)

    @app.tool()
    def search(query: str) -> list[str]:
        """Search the notes."""
        seen.append(query)
        return [doc for doc in docs if query.lower() in doc.lower()]

    return app


class ExplodingTarget:
    """A target whose adapter has a bug: it raises something that is not an UpstreamError."""

    name = "buggy"
    tools: ClassVar[list[mcp_types.Tool]] = [
        mcp_types.Tool(name="search", input_schema={"type": "object", "properties": {"query": {"type": "string"}}})
    ]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        raise RuntimeError("adapter bug")
