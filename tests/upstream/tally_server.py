"""An upstream that counts the calls that reach it: the result cache's tests see what it spared.

python -m tests.upstream.tally_server --transport stdio
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tests.upstream.serving import run


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("tally")
    reached = {"calls": 0}

    @app.tool(description="Count this call; answer the label and how many calls reached the server.")
    async def tally(label: str = "") -> str:
        reached["calls"] += 1
        return f"{label} #{reached['calls']}"

    @app.tool(description="Count this call, then fail with a tool error (isError).")
    async def broken() -> str:
        reached["calls"] += 1
        raise ToolError(f"broken #{reached['calls']}")

    @app.tool(description="How many calls reached the server (never cached by the tests).")
    async def reached_calls() -> int:
        return reached["calls"]

    return app


if __name__ == "__main__":
    run(build_server, "An upstream that counts its calls")
