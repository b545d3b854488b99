"""A low-level MCP server listing many tools over several pages (EC-006), on stdio.

python -m tests.upstream.paged_server --tools 600 --page 100
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server


def build_server(count: int, page: int) -> Server[Any]:
    tools = [
        types.Tool(
            name=f"tool_{i:04d}",
            description=f"Synthetic tool number {i}",
            input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        )
        for i in range(count)
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + page
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < count else None)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        x = (params.arguments or {}).get("x", 0)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}:{x}")])

    return Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(count: int, page: int) -> None:
    server = build_server(count, page)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=600)
    parser.add_argument("--page", type=int, default=100)
    args = parser.parse_args()
    anyio.run(main, args.tools, args.page)
