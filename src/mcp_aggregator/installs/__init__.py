"""Servers from MCP Registries (v0.1 API): the stored catalogue, search, and install.

Not to be confused with ``registry/`` (the gateway's own database of registered servers).
"""

from mcp_aggregator.installs.config import DEFAULT_REGISTRIES, McpRegistrySource
from mcp_aggregator.installs.server_json import EntryStatus, RegistryItem, ServerJson, parse_server_json

__all__ = [
    "DEFAULT_REGISTRIES",
    "EntryStatus",
    "McpRegistrySource",
    "RegistryItem",
    "ServerJson",
    "parse_server_json",
]
