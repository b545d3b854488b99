"""A search server run as a subprocess by the engine tests.

``search`` mode answers like a small documentation index; ``crash`` mode lists its tool
normally and then exits in the middle of the first call, like a server that dies.
"""

import os
import sys

from mcp.server import MCPServer

DOCS = [
    "Subprocess docs: React hooks let function components manage state with useState.",
    "Subprocess docs: stdio transport frames JSON-RPC messages one per line.",
]


def build(mode: str) -> MCPServer:
    app = MCPServer(f"stdio-{mode}")

    @app.tool()
    def search(query: str) -> list[str]:
        """Search the subprocess index."""
        if mode == "crash":
            os._exit(3)
        return DOCS

    return app


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else "search").run()
