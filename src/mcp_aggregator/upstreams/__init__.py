"""Sessions to upstream MCP servers: one supervised task per upstream."""

from mcp_aggregator.upstreams.connection import ConnectionState, UpstreamConnection, describe_error

__all__ = ["ConnectionState", "UpstreamConnection", "describe_error"]
