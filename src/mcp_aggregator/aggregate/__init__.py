"""The aggregator query: fan a question out to several servers, return ranked,
deduplicated results (the ``mcp__proxy__aggregator__query`` tool)."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = [
    "AGGREGATION_FAILED_MESSAGE",
    "INVALID_QUERY_MESSAGE",
    "QUERY_TOOL_DESCRIPTION",
    "QUERY_TOOL_INPUT_SCHEMA",
    "QUERY_TOOL_NAME",
    "QUERY_TOOL_OUTPUT_SCHEMA",
    "AggregatorEngine",
    "AggregatorSettings",
    "LlmSettings",
    "QueryMetadata",
    "QueryRequest",
    "QueryResponse",
    "QueryTarget",
    "RankedResult",
    "RankingWeights",
    "ScoreBreakdown",
    "SentQueries",
    "ServerFailure",
    "ServerQuerySettings",
    "ServerRule",
    "ToolSearch",
    "jsonrpc_error_of",
    "parse_query_arguments",
    "query_tool",
]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "AggregatorSettings": ".config",
        "LlmSettings": ".config",
        "RankingWeights": ".config",
        "ServerQuerySettings": ".config",
        "ServerRule": ".config",
        "AggregatorEngine": ".engine",
        "ToolSearch": ".engine",
        "QueryRequest": ".query_request",
        "parse_query_arguments": ".query_request",
        "QueryMetadata": ".query_response",
        "QueryResponse": ".query_response",
        "RankedResult": ".query_response",
        "SentQueries": ".query_response",
        "ServerFailure": ".query_response",
        "QueryTarget": ".query_target",
        "ScoreBreakdown": ".ranking",
        "AGGREGATION_FAILED_MESSAGE": ".tool_contract",
        "INVALID_QUERY_MESSAGE": ".tool_contract",
        "QUERY_TOOL_DESCRIPTION": ".tool_contract",
        "QUERY_TOOL_INPUT_SCHEMA": ".tool_contract",
        "QUERY_TOOL_NAME": ".tool_contract",
        "QUERY_TOOL_OUTPUT_SCHEMA": ".tool_contract",
        "jsonrpc_error_of": ".tool_contract",
        "query_tool": ".tool_contract",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.aggregate.config import (
        AggregatorSettings,
        LlmSettings,
        RankingWeights,
        ServerQuerySettings,
        ServerRule,
    )
    from mcp_aggregator.aggregate.engine import AggregatorEngine, ToolSearch
    from mcp_aggregator.aggregate.query_request import QueryRequest, parse_query_arguments
    from mcp_aggregator.aggregate.query_response import (
        QueryMetadata,
        QueryResponse,
        RankedResult,
        SentQueries,
        ServerFailure,
    )
    from mcp_aggregator.aggregate.query_target import QueryTarget
    from mcp_aggregator.aggregate.ranking import ScoreBreakdown
    from mcp_aggregator.aggregate.tool_contract import (
        AGGREGATION_FAILED_MESSAGE,
        INVALID_QUERY_MESSAGE,
        QUERY_TOOL_DESCRIPTION,
        QUERY_TOOL_INPUT_SCHEMA,
        QUERY_TOOL_NAME,
        QUERY_TOOL_OUTPUT_SCHEMA,
        jsonrpc_error_of,
        query_tool,
    )
