"""The MCP server LLM clients talk to: exposure modes, error mapping, stdio and HTTP."""

from mcp_aggregator.serve.http_app import build_http_app
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.runner import serve_http, serve_stdio
from mcp_aggregator.serve.surfaces import build_surface

__all__ = ["GatewayServer", "build_http_app", "build_surface", "serve_http", "serve_stdio"]
