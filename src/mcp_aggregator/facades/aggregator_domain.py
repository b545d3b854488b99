"""The ``aggregator`` domain: one ``query`` fanned out to many servers, ranked and deduplicated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from mcp_aggregator.facades.command import Command
from mcp_aggregator.facades.detail import Detail, excerpt
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.envelope import Counted
from mcp_aggregator.facades.param_schema import object_schema

RESULT_EXCERPT_CHARS = 300
# The input contract of the aggregator query tool (seed 000), unchanged.
QUERY_PARAMS = object_schema(
    {
        "query": {"type": "string", "minLength": 1, "maxLength": 10000},
        "maxResults": {"type": "integer", "minimum": 10, "maximum": 100},
        "servers": {"type": "array", "items": {"type": "string"}},
    },
    required=["query"],
)
_STANDARD_METADATA = ("serversQueried", "serversSucceeded", "resultsReturned", "processingTimeMs")


class QueryRunner(Protocol):
    """Runs the aggregator query (seed 000): ``{query, maxResults?, servers?}`` in,
    ``{"results": [...], "metadata": {...}}`` out. Raises ``InvalidQueryError`` /
    ``AggregationFailedError``."""

    async def query(self, arguments: Mapping[str, Any]) -> dict[str, Any]: ...


def project_results(answer: Mapping[str, Any], detail: Detail) -> dict[str, Any]:
    """``minimal``: rank and server per result; ``standard``: plus score and a content
    excerpt, and the key metadata counts; ``full``: the runner's answer unchanged."""
    results = answer.get("results", [])
    if detail is Detail.FULL:
        return dict(answer)
    if detail is Detail.MINIMAL:
        return {"results": [{"rank": r.get("rank"), "server": r.get("server")} for r in results]}
    metadata = answer.get("metadata", {})
    return {
        "results": [
            {
                "rank": r.get("rank"),
                "server": r.get("server"),
                "relevanceScore": r.get("relevanceScore"),
                "content": excerpt(r.get("content"), RESULT_EXCERPT_CHARS),
            }
            for r in results
        ],
        "metadata": {key: metadata[key] for key in _STANDARD_METADATA if key in metadata},
    }


def build_aggregator_domain(runner: QueryRunner, *, name: str = "aggregator") -> Domain:
    async def query(params: dict[str, Any], detail: Detail) -> Any:
        answer = await runner.query(params)
        return Counted(project_results(answer, detail), len(answer.get("results", [])))

    commands = [
        Command("query", "ask many servers at once; ranked, deduplicated results", query, QUERY_PARAMS),
    ]
    return Domain(name, "Query several MCP servers concurrently for context.", commands)
