"""In-memory fakes of the views the facade domains read, and an MCP server serving domains."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server

from mcp_aggregator.errors import (
    AggregationFailedError,
    ServerNotFoundError,
    ToolNotFoundError,
    UpstreamTimeoutError,
)
from mcp_aggregator.facades import (
    Domain,
    ScoredTool,
    ServerRecord,
    ServerStatus,
    ToolPage,
    ToolRecord,
    paginate,
    to_call_tool_result,
)

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["query"],
}
TOOLS = [
    ToolRecord(
        "docs__search",
        "docs",
        "Search the documentation. Returns the best matching pages with excerpts.",
        SEARCH_SCHEMA,
        original_name="search",
        skill="research",
    ),
    ToolRecord("git__git_log", "git", "Show the commit log of a repository.", {"type": "object"}, "git_log"),
    ToolRecord("git__git_status", "git", "Show the working tree status.", {"type": "object"}, "git_status"),
    ToolRecord("flaky__fail", "flaky", "Always answers with a tool error.", {"type": "object"}, "fail"),
    ToolRecord("flaky__hang", "flaky", "Never answers in time.", {"type": "object"}, "hang"),
]


class FakeCatalog:
    """A ToolCatalogView over a fixed list; word-overlap search; records executed calls."""

    def __init__(self, tools: Sequence[ToolRecord] = TOOLS) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def search(self, query: str, k: int, server: str | None, skill: str | None) -> Sequence[ScoredTool]:
        words = set(query.lower().split())
        hits = []
        for tool in self._filtered(server, skill):
            text = set(f"{tool.name} {tool.description}".lower().replace("_", " ").split())
            score = len(words & text) / max(len(words), 1)
            if score:
                hits.append(ScoredTool(tool, score))
        hits.sort(key=lambda hit: (-hit.score, hit.tool.name))
        return hits[:k]

    async def list(self, server: str | None, skill: str | None, cursor: str | None, limit: int) -> ToolPage:
        items, next_cursor = paginate(self._filtered(server, skill), cursor, limit)
        return ToolPage(items, next_cursor)

    async def get(self, name: str) -> ToolRecord:
        try:
            return self.tools[name]
        except KeyError:
            raise ToolNotFoundError(name) from None

    async def execute(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        tool = await self.get(name)
        self.calls.append((name, arguments))
        if tool.original_name == "fail":
            return types.CallToolResult(content=[types.TextContent(text="disk full")], is_error=True)
        if tool.original_name == "hang":
            raise UpstreamTimeoutError(tool.server, "call timed out after 3s")
        text = f"{tool.original_name} ran with {json.dumps(arguments, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    async def input_schema(self, name: str, *, calling: bool = False) -> Mapping[str, Any]:
        return (await self.get(name)).input_schema

    def _filtered(self, server: str | None, skill: str | None) -> list[ToolRecord]:
        return [
            tool
            for tool in sorted(self.tools.values(), key=lambda tool: tool.name)
            if (server is None or tool.server == server) and (skill is None or tool.skill == skill)
        ]


class FakeServers:
    def __init__(self) -> None:
        self.servers = [
            ServerRecord("docs", "CONNECTED", "http", 1, "Project documentation.", ("search",)),
            ServerRecord("git", "DEGRADED", "stdio", 2, "Git for the repo.", ("git_log", "git_status"), "slow answers"),
        ]

    async def list(self) -> Sequence[ServerRecord]:
        return self.servers

    async def get(self, name: str) -> ServerRecord:
        for server in self.servers:
            if server.name == name:
                return server
        raise ServerNotFoundError(name)

    async def status(self, name: str) -> ServerStatus:
        server = await self.get(name)
        return ServerStatus(name, server.status, "2026-01-01T00:00:00Z", server.last_error, {"failures": 0})


class FakeRunner:
    def __init__(self) -> None:
        self.seen: list[Mapping[str, Any]] = []

    async def query(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        self.seen.append(arguments)
        if arguments["query"] == "nothing answers":
            raise AggregationFailedError(["docs"], ["docs: timeout"])
        results = [
            {"content": "useState keeps state. " * 40, "server": "docs", "relevanceScore": 0.9, "rank": 1},
            {"content": "A code example.", "server": "git", "relevanceScore": 0.5, "rank": 2},
        ]
        metadata = {
            "serversQueried": 2,
            "serversSucceeded": 2,
            "totalResultsRaw": 3,
            "totalResultsDedup": 2,
            "resultsReturned": 2,
            "processingTimeMs": 12,
            "serverDiversity": 1.0,
        }
        return {"results": results, "metadata": metadata}


def serve_domains(domains: Sequence[Domain]) -> Server[Any]:
    """A low-level MCP server exposing each domain as one tool, as the gateway's serve/ will."""
    by_name = {domain.name: domain for domain in domains}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[domain.tool_definition() for domain in domains])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        domain = by_name[params.name]
        return to_call_tool_result(await domain.dispatch(params.arguments))

    return Server("facades-test", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture
def catalog() -> FakeCatalog:
    return FakeCatalog()


@pytest.fixture
def servers() -> FakeServers:
    return FakeServers()


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()
