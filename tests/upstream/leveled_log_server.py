"""A stdio upstream whose one tool logs a line at each of four levels, whatever level it was
set to (the SDK's server leaves filtering to the application)."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

LEVELS = ("debug", "info", "warning", "error")


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("leveled")

    @app.tool(description="Log one line at each of debug, info, warning and error.")
    async def chatter(ctx: Context) -> str:
        for level in LEVELS:
            await ctx.log(level, f"a {level} line")  # type: ignore[arg-type]
        return "logged"

    return app


if __name__ == "__main__":
    build_server().run("stdio")
