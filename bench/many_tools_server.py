"""A plain SDK server (low level, stdio) with ``--tools`` generated tools, the upstream of
``startup_bench.py``: each tool has its own name and a description of a few dozen words, so
that every one is a new text for the search index to embed and classify.

python bench/many_tools_server.py --name s07 --tools 200
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

_VERBS = (
    "list",
    "create",
    "update",
    "delete",
    "search",
    "export",
    "import",
    "archive",
    "summarise",
    "translate",
    "validate",
    "schedule",
    "merge",
    "compare",
    "download",
    "upload",
    "tag",
    "share",
    "lock",
    "restore",
)
_OBJECTS = (
    "invoices",
    "calendar events",
    "pull requests",
    "support tickets",
    "spreadsheet rows",
    "email drafts",
    "log files",
    "customer records",
    "shipping labels",
    "chat messages",
    "build artifacts",
    "database tables",
    "map locations",
    "weather alerts",
    "expense reports",
    "wiki pages",
    "audio clips",
    "photos",
    "contracts",
    "sensor readings",
)
_DETAILS = (
    "with optional filters by date and owner",
    "in bulk, returning a job id to poll",
    "and returns a short summary for each item",
    "respecting the caller's permissions",
    "with paging through a cursor",
    "from the team's shared workspace",
    "and notifies the people who follow them",
    "keeping a copy in the audit history",
    "as CSV or JSON, as asked",
    "over the provider's REST API",
)


def tool_list(server: str, count: int) -> list[types.Tool]:
    """``count`` tools of ``server``, each described differently from every other."""
    tools = []
    for i in range(count):
        verb = _VERBS[i % len(_VERBS)]
        obj = _OBJECTS[(i // len(_VERBS) + hash_of(server)) % len(_OBJECTS)]
        detail = _DETAILS[(i * 7 + hash_of(server)) % len(_DETAILS)]
        tools.append(
            types.Tool(
                name=f"{verb}_{obj.replace(' ', '_')}_{i:03d}",
                description=(
                    f"{verb.capitalize()} {obj} of the {server} service {detail}. "
                    f"Variant {i} of the {server} toolkit; use it when a task needs to {verb} {obj}."
                ),
                input_schema={
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                },
            )
        )
    return tools


def hash_of(text: str) -> int:
    """A stable small number for ``text`` (``hash`` differs between processes)."""
    return sum(text.encode())


def build_server(name: str, count: int) -> Server[Any]:
    tools = tool_list(name, count)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name}:{params.name}")])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


async def main(name: str, count: int) -> None:
    server = build_server(name, count)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="many")
    parser.add_argument("--tools", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.name, args.tools)
