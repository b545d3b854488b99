"""A server whose tool mirrors an argument into an ``Mcp-Param-Region`` header (the tool's
``x-mcp-header`` annotation); over streamable HTTP the SDK's server refuses a call whose
header is missing or disagrees with the argument.

Tools: ``locate`` (``region``, mirrored; answers it), ``plain`` (``text``, not mirrored) and
``caller`` (the ``clientInfo`` of the request's envelope, as ``name version``).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
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

    @app.tool()
    def caller(ctx: Context) -> str:
        """Answer who called, by the envelope's ``clientInfo``."""
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        return f"{info.name} {info.version}" if info is not None else "nobody"

    return app


if __name__ == "__main__":
    run(build, __doc__ or "")
