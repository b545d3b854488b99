"""Domain facades: one MCP tool per domain, a ``cmd`` per operation, one envelope for every answer."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "QueryRunner": ".aggregator_domain",
        "build_aggregator_domain": ".aggregator_domain",
        "Command": ".command",
        "Handler": ".command",
        "Detail": ".detail",
        "Domain": ".domain",
        "Counted": ".envelope",
        "Envelope": ".envelope",
        "Listing": ".envelope",
        "to_call_tool_result": ".envelope",
        "build_files_domain": ".files_domain",
        "ScoredTool": ".records",
        "ScoredTools": ".records",
        "ServerRecord": ".records",
        "ServerStatus": ".records",
        "ToolPage": ".records",
        "ToolRecord": ".records",
        "paginate": ".records",
        "CommitMode": ".roundtrip",
        "RoundtripStore": ".roundtrip",
        "ServerView": ".servers_domain",
        "build_servers_domain": ".servers_domain",
        "ToolCatalogView": ".tools_domain",
        "build_tools_domain": ".tools_domain",
        "UpstreamCall": ".upstream_domain",
        "build_upstream_domain": ".upstream_domain",
    },
)

if typing.TYPE_CHECKING:
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
