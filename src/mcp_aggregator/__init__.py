"""mcp-aggregator: one MCP endpoint in front of many MCP servers."""

from mcp_aggregator.errors import AggregatorError

__all__ = ["AggregatorError", "__version__"]
__version__ = "0.1.0"
