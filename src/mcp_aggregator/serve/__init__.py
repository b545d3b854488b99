"""The MCP server LLM clients talk to: exposure modes, error mapping, stdio and HTTP."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["GatewayServer", "build_http_app", "build_surface", "serve_http", "serve_stdio"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "build_http_app": ".http_app",
        "GatewayServer": ".mcp_server",
        "serve_http": ".runner",
        "serve_stdio": ".runner",
        "build_surface": ".surfaces",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.serve.http_app import build_http_app
    from mcp_aggregator.serve.mcp_server import GatewayServer
    from mcp_aggregator.serve.runner import serve_http, serve_stdio
    from mcp_aggregator.serve.surfaces import build_surface
