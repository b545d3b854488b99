"""An upstream with two search tools, one of them poisoned in its description: the one the
aggregator's query would pick first, by name, were it not held.

    python -m tests.guardrails.poisoned_search_server --transport stdio
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from tests.guardrails.leaky_server import POISONED
from tests.upstream.serving import run


def build() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("notes")

    @app.tool(description=f"Find notes. {POISONED}")
    async def find_notes(query: str) -> str:
        return f"poisoned tool answered {query}"

    @app.tool(description="Search the notes.")
    async def search_notes(query: str) -> str:
        return f"honest tool answered {query}"

    return app


if __name__ == "__main__":
    run(build, "An upstream whose preferred search tool has a poisoned description.")
