"""The aggregator tool as published to MCP clients: name, description, schemas and error
shapes, verbatim from the contract (seed 000)."""

from __future__ import annotations

import copy
from typing import Any, Final

import mcp_types

from mcp_aggregator.errors import AggregationFailedError, InvalidQueryError

QUERY_TOOL_NAME: Final = "mcp__proxy__aggregator__query"

QUERY_TOOL_DESCRIPTION: Final = (
    "Query multiple MCP servers concurrently and receive ranked, aggregated results "
    "optimized for LLM context efficiency."
)

QUERY_TOOL_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "The user prompt or question to search for across MCP servers",
            "minLength": 1,
            "maxLength": 10000,
        },
        "maxResults": {
            "type": "integer",
            "description": "Maximum number of results to return (default: 30)",
            "minimum": 10,
            "maximum": 100,
            "default": 30,
        },
        "servers": {
            "type": "array",
            "description": "Optional list of specific servers to query (default: all configured)",
            "items": {"type": "string"},
        },
    },
    "required": ["query"],
}

QUERY_TOOL_OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "The result content from the MCP server"},
                    "server": {"type": "string", "description": "Which MCP server provided this result"},
                    "relevanceScore": {
                        "type": "number",
                        "description": "Relevance score (0.0 to 1.0)",
                        "minimum": 0.0,
                        "maximum": 1.0,
                    },
                    "rank": {
                        "type": "integer",
                        "description": "Ranking position (1 = most relevant)",
                        "minimum": 1,
                    },
                    "timestamp": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When this result was retrieved",
                    },
                },
                "required": ["content", "server", "relevanceScore", "rank"],
            },
        },
        "metadata": {
            "type": "object",
            "properties": {
                "serversQueried": {"type": "integer", "description": "Number of servers queried"},
                "serversSucceeded": {
                    "type": "integer",
                    "description": "Number of servers that responded successfully",
                },
                "totalResultsRaw": {"type": "integer", "description": "Total results before ranking/dedup"},
                "totalResultsDedup": {"type": "integer", "description": "Results after deduplication"},
                "resultsReturned": {"type": "integer", "description": "Final result count returned"},
                "processingTimeMs": {
                    "type": "integer",
                    "description": "Total processing time in milliseconds",
                },
                "serverDiversity": {
                    "type": "number",
                    "description": "Proportion of queried servers that contributed results",
                    "minimum": 0.0,
                    "maximum": 1.0,
                },
            },
            "required": ["serversQueried", "serversSucceeded", "resultsReturned", "processingTimeMs"],
        },
    },
    "required": ["results", "metadata"],
}

INVALID_QUERY_MESSAGE: Final = "Invalid query parameters"
AGGREGATION_FAILED_MESSAGE: Final = "Aggregation failed: all servers unavailable"


def query_tool(*, output_schema: bool = True) -> mcp_types.Tool:
    """The tool definition to list (fresh copies of the schemas, safe to mutate);
    ``output_schema=False``: without its output schema (code mode's listing)."""
    return mcp_types.Tool(
        name=QUERY_TOOL_NAME,
        description=QUERY_TOOL_DESCRIPTION,
        input_schema=copy.deepcopy(QUERY_TOOL_INPUT_SCHEMA),
        output_schema=copy.deepcopy(QUERY_TOOL_OUTPUT_SCHEMA) if output_schema else None,
    )


def jsonrpc_error_of(exc: InvalidQueryError | AggregationFailedError) -> mcp_types.ErrorData:
    """The contract's JSON-RPC error for a query error.

    ``InvalidQueryError`` → -32602 "Invalid query parameters", ``data: {field, reason}``;
    ``AggregationFailedError`` → -32603 "Aggregation failed: all servers unavailable",
    ``data: {attemptedServers, errors}``. ``serve/`` raises it as
    ``MCPError.from_error_data(...)``.
    """
    if isinstance(exc, InvalidQueryError):
        return mcp_types.ErrorData(
            code=mcp_types.INVALID_PARAMS,
            message=INVALID_QUERY_MESSAGE,
            data={"field": exc.field, "reason": exc.reason},
        )
    return mcp_types.ErrorData(
        code=mcp_types.INTERNAL_ERROR,
        message=AGGREGATION_FAILED_MESSAGE,
        data={"attemptedServers": list(exc.attempted), "errors": list(exc.errors)},
    )
