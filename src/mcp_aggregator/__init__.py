"""mcp-aggregator: one MCP endpoint in front of many MCP servers."""

__version__ = "0.1.0"

from mcp_aggregator.errors import AggregatorError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.settings import ServerConfig, Settings, load_settings

__all__ = ["AggregatorError", "Gateway", "ServerConfig", "Settings", "__version__", "load_settings"]
