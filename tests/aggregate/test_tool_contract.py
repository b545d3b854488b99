"""The published tool end to end: a small gateway server exposes the aggregator tool the
way ``serve/`` will, and a real MCP client checks the wire shapes of the contract."""

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import jsonschema
import mcp_types
import pytest
from mcp import Client
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

import mcp_aggregator.aggregate as aggregate
from mcp_aggregator.aggregate import (
    QUERY_TOOL_DESCRIPTION,
    QUERY_TOOL_INPUT_SCHEMA,
    QUERY_TOOL_NAME,
    QUERY_TOOL_OUTPUT_SCHEMA,
    AggregatorEngine,
    AggregatorSettings,
    QueryTarget,
    jsonrpc_error_of,
    parse_query_arguments,
    query_tool,
)
from mcp_aggregator.errors import AggregationFailedError, InvalidQueryError

from .upstreams import connect_targets, hanging_server, list_server

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
CONTRACT_EXAMPLE_TEXT = (
    '{"results":[{"content":"React hooks documentation: useState allows...","server":"context7",'
    '"relevanceScore":0.92,"rank":1,"timestamp":"2025-10-13T03:00:00Z"},{"content":"Code example from your '
    'project showing useState pattern...","server":"serena","relevanceScore":0.87,"rank":2,'
    '"timestamp":"2025-10-13T03:00:00Z"}],"metadata":{"serversQueried":2,"serversSucceeded":2,'
    '"totalResultsRaw":15,"totalResultsDedup":12,"resultsReturned":2,"processingTimeMs":1234,"serverDiversity":1.0}}'
)


def test_package_exports_exactly_its_core_types() -> None:
    assert sorted(aggregate.__all__) == sorted(
        [
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
    )
    assert all(hasattr(aggregate, name) for name in aggregate.__all__)


def test_tool_definition_is_the_contract() -> None:
    tool = query_tool()
    assert tool.name == "mcp__proxy__aggregator__query"
    assert tool.description == (
        "Query multiple MCP servers concurrently and receive ranked, aggregated results "
        "optimized for LLM context efficiency."
    )
    assert tool.input_schema["required"] == ["query"]
    assert tool.input_schema["properties"]["query"] | {"description": None} == {
        "type": "string",
        "description": None,
        "minLength": 1,
        "maxLength": 10000,
    }
    assert tool.input_schema["properties"]["maxResults"]["default"] == 30
    assert tool.output_schema is not None
    assert tool.output_schema["properties"]["metadata"]["required"] == [
        "serversQueried",
        "serversSucceeded",
        "resultsReturned",
        "processingTimeMs",
    ]
    jsonschema.Draft202012Validator.check_schema(QUERY_TOOL_INPUT_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(QUERY_TOOL_OUTPUT_SCHEMA)


def test_contract_example_response_satisfies_the_output_schema() -> None:
    jsonschema.validate(json.loads(CONTRACT_EXAMPLE_TEXT), QUERY_TOOL_OUTPUT_SCHEMA)


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "q"},
        {"query": "q", "maxResults": 10},
        {"query": "q", "maxResults": 100, "servers": []},
        {"query": ""},
        {"query": "q", "maxResults": 9},
        {"query": "q", "maxResults": 101},
        {"query": "q", "maxResults": "30"},
        {"query": "q", "servers": "memory"},
        {"query": "q", "servers": [1]},
        {"query": 5},
        {},
    ],
)
def test_parsing_agrees_with_the_input_schema_on_types_and_ranges(arguments: dict[str, Any]) -> None:
    schema_ok = jsonschema.Draft202012Validator(QUERY_TOOL_INPUT_SCHEMA).is_valid(arguments)
    try:
        parse_query_arguments(arguments, known_servers={"memory"}, default_max_results=30)
    except InvalidQueryError:
        parsed_ok = False
    else:
        parsed_ok = True
    assert parsed_ok == schema_ok


def test_errors_map_to_the_contract_json_rpc_shapes() -> None:
    invalid = jsonrpc_error_of(InvalidQueryError("maxResults", "Must be between 10 and 100, got 500"))
    assert invalid.model_dump() == {
        "code": -32602,
        "message": "Invalid query parameters",
        "data": {"field": "maxResults", "reason": "Must be between 10 and 100, got 500"},
    }
    failed = jsonrpc_error_of(
        AggregationFailedError(["context7", "serena"], ["context7: timeout after 3s", "serena: connection refused"])
    )
    assert failed.model_dump() == {
        "code": -32603,
        "message": "Aggregation failed: all servers unavailable",
        "data": {
            "attemptedServers": ["context7", "serena"],
            "errors": ["context7: timeout after 3s", "serena: connection refused"],
        },
    }


def gateway(engine: AggregatorEngine, targets: Sequence[QueryTarget], known: Sequence[str]) -> Server[Any]:
    """What ``serve/`` does with the exports: list the tool, parse, query, map errors."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=[query_tool()])

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        try:
            request = parse_query_arguments(
                params.arguments, known_servers=known, default_max_results=engine.settings.default_max_results
            )
            response = await engine.query(request, targets)
        except (InvalidQueryError, AggregationFailedError) as exc:
            raise MCPError.from_error_data(jsonrpc_error_of(exc)) from exc
        return response.to_call_tool_result()

    return Server("gateway", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


@asynccontextmanager
async def gateway_client(**settings: Any) -> AsyncIterator[Client]:
    upstreams = {
        "context7": list_server("context7", ["React hooks documentation: useState allows state"]),
        "serena": hanging_server("serena"),
    }
    engine = AggregatorEngine(
        AggregatorSettings.from_mapping({"serverTimeoutSecs": 0.2, **settings}), clock=lambda: NOW
    )
    async with (
        connect_targets(upstreams) as targets,
        Client(gateway(engine, targets, list(upstreams)), cache=None) as client,
    ):
        yield client


async def test_client_sees_the_tool_and_gets_text_plus_structured_results() -> None:
    async with gateway_client() as client:
        [tool] = (await client.list_tools()).tools
        assert (tool.name, tool.input_schema, tool.output_schema) == (
            QUERY_TOOL_NAME,
            QUERY_TOOL_INPUT_SCHEMA,
            QUERY_TOOL_OUTPUT_SCHEMA,
        )
        assert tool.description == QUERY_TOOL_DESCRIPTION
        result = await client.call_tool(QUERY_TOOL_NAME, {"query": "react hooks", "maxResults": 20})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["results"][0] == {
        "content": "React hooks documentation: useState allows state",
        "server": "context7",
        "relevanceScore": result.structured_content["results"][0]["relevanceScore"],
        "rank": 1,
        "timestamp": "2026-11-21T12:00:00.000Z",
    }
    assert result.structured_content["metadata"]["serversQueried"] == 2
    assert result.structured_content["metadata"]["serversSucceeded"] == 1


async def test_client_gets_invalid_params_error_with_field_and_reason() -> None:
    async with gateway_client() as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool(QUERY_TOOL_NAME, {"query": "react", "maxResults": 500})
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32602,
        "Invalid query parameters",
        {"field": "maxResults", "reason": "Must be between 10 and 100, got 500"},
    )


async def test_client_gets_aggregation_failed_error_when_every_server_fails() -> None:
    async with gateway_client() as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool(QUERY_TOOL_NAME, {"query": "react", "servers": ["serena"]})
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32603,
        "Aggregation failed: all servers unavailable",
        {"attemptedServers": ["serena"], "errors": ["serena: timeout after 0.2s"]},
    )
