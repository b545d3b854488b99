"""A stdio upstream whose lists carry SEP-2549 hints (``ttlMs`` from ``HINT_TTL_MS``, 0 when
unset), counting how often it is asked for its tools, and adding a tool on demand with the
announcement."""

from __future__ import annotations

import os
from typing import Any

from mcp.server import MCPServer
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context


def build_server() -> MCPServer[Any]:
    ttl_ms = int(os.environ.get("HINT_TTL_MS", "0"))
    hints = {"tools/list": CacheHint(ttl_ms=ttl_ms, scope="public")}
    app: MCPServer[Any] = MCPServer("hinted", cache_hints=hints)
    asked: list[int] = []

    async def count_lists(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/list":
            asked.append(1)
        return await call_next(ctx)

    app.middleware.append(count_lists)

    @app.tool(description="How many times tools/list was asked here.")
    async def lists_asked() -> int:
        return len(asked)

    @app.tool(description="Add the tool `extra` and announce that the tool list changed.")
    async def add_extra(ctx: Context) -> str:
        app.add_tool(lambda: "extra", name="extra", description="An added tool.")
        await ctx.notify_tools_changed()
        return "added"

    return app


if __name__ == "__main__":
    build_server().run("stdio")
