"""The aggregator tool as published to MCP clients: name, description and schemas, verbatim
from the contract (seed 000)."""

from __future__ import annotations

from typing import Any, Final

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
