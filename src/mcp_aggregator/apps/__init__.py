"""MCP Apps (``io.modelcontextprotocol/ui``) across servers: the extension relayed both ways,
and the ``ui://`` addresses a tool or result names shown as the gateway routes them."""

from mcp_aggregator.apps.app_uris import app_uri, binds_app, shown_result, shown_tool
from mcp_aggregator.apps.extension import EXTENSION_ID, relayed_extensions, upstream_extensions

__all__ = [
    "EXTENSION_ID",
    "app_uri",
    "binds_app",
    "relayed_extensions",
    "shown_result",
    "shown_tool",
    "upstream_extensions",
]
