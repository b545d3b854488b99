"""Domain facades: one MCP tool per domain, a ``cmd`` per operation, one envelope for every answer."""

from mcp_aggregator.facades.aggregator_domain import QueryRunner, build_aggregator_domain
from mcp_aggregator.facades.command import Command, Handler
from mcp_aggregator.facades.detail import Detail
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.envelope import Counted, Envelope, Listing, to_call_tool_result
from mcp_aggregator.facades.files_domain import build_files_domain
from mcp_aggregator.facades.records import (
    ScoredTool,
    ScoredTools,
    ServerRecord,
    ServerStatus,
    ToolPage,
    ToolRecord,
    paginate,
)
from mcp_aggregator.facades.roundtrip import CommitMode, RoundtripStore
from mcp_aggregator.facades.servers_domain import ServerView, build_servers_domain
from mcp_aggregator.facades.tools_domain import ToolCatalogView, build_tools_domain
from mcp_aggregator.facades.upstream_domain import UpstreamCall, build_upstream_domain

__all__ = [
    "Command",
    "CommitMode",
    "Counted",
    "Detail",
    "Domain",
    "Envelope",
    "Handler",
    "Listing",
    "QueryRunner",
    "RoundtripStore",
    "ScoredTool",
    "ScoredTools",
    "ServerRecord",
    "ServerStatus",
    "ServerView",
    "ToolCatalogView",
    "ToolPage",
    "ToolRecord",
    "UpstreamCall",
    "build_aggregator_domain",
    "build_files_domain",
    "build_servers_domain",
    "build_tools_domain",
    "build_upstream_domain",
    "paginate",
    "to_call_tool_result",
]
