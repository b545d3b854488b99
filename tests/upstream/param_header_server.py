"""A server whose tool mirrors an argument into an ``Mcp-Param-Region`` header (the tool's
``x-mcp-header`` annotation); over streamable HTTP the SDK's server refuses a call whose
header is missing or disagrees with the argument.

Tools: ``locate`` (``region``, mirrored; answers it) and ``plain`` (``text``, not mirrored).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from pydantic import Field

from tests.upstream.serving import run


def build() -> MCPServer:
    app: MCPServer = MCPServer("param-header", log_level="WARNING")

    @app.tool()
    def locate(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Answer the region it was called for."""
        return f"in {region}"

    @app.tool()
    def plain(text: str) -> str:
        """Answer ``text``."""
        return text

    return app


if __name__ == "__main__":
    run(build, __doc__ or "")
