"""Sessions to upstream MCP servers: one supervised task per upstream."""

from mcp_aggregator.upstreams.connection import ConnectionState, UpstreamConnection
from mcp_aggregator.upstreams.wire_checks import describe_error

__all__ = ["ConnectionState", "UpstreamConnection", "describe_error"]
