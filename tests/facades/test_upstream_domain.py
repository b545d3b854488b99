import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server

from mcp_aggregator.errors import UpstreamClosedError
from mcp_aggregator.facades import Domain, build_upstream_domain

WEATHER_TOOLS = [
    types.Tool(
        name="get_forecast",
        description="Get the weather forecast for a city. Answers in metric units.",
        input_schema={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    ),
    types.Tool(name="Get-Alerts", description="Severe weather alerts.", input_schema={"type": "object"}),
    types.Tool(
        name="broken_schema",
        description="",
        input_schema={"type": "object", "properties": {"n": {"type": "number", "minimum": True}}},
    ),
]


def weather_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=WEATHER_TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if args.get("city") == "Atlantis":
            return types.CallToolResult(content=[types.TextContent(text="unknown city")], is_error=True)
        text = f"{params.name}: {json.dumps(args, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("weather", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def weather_domain() -> AsyncIterator[Domain]:
    """The facade over a live in-process upstream; a context manager, not a fixture, because the
    client session must close in the task that opened it."""
    async with Client(weather_server(), cache=None) as client:
        tools = (await client.list_tools()).tools

        async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        yield build_upstream_domain("weather", tools, call, description="Weather for any city. Free, no key.")


async def test_each_upstream_tool_is_a_command_in_the_description() -> None:
    async with weather_domain() as weather:
        tool = weather.tool_definition()
        assert tool.name == "weather"
        assert tool.description == (
            "Weather for any city. Free, no key.\n"
            "Commands (cmd; args go in params):\n"
            "get_forecast(city, days?): Get the weather forecast for a city. Answers in metric units.\n"
            "Get-Alerts(): Severe weather alerts.\n"
            "broken_schema(n?)\n"
            "help(command?): list commands; detail=full adds input schemas"
        )


async def test_a_command_calls_the_upstream_tool_by_its_original_name() -> None:
    async with weather_domain() as weather:
        envelope = await weather.dispatch({"cmd": "get-alerts"})
        assert envelope == {"ok": True, "cmd": "get-alerts", "data": "Get-Alerts: {}"}
        forecast = await weather.dispatch({"cmd": "get_forecast", "params": {"city": "Oslo", "days": 2}})
        assert forecast["data"] == 'get_forecast: {"city": "Oslo", "days": 2}'


async def test_params_are_validated_against_the_upstream_schema() -> None:
    async with weather_domain() as weather:
        envelope = await weather.dispatch({"cmd": "get_forecast", "params": {"city": "Oslo", "days": 9}})
        assert envelope == {"ok": False, "cmd": "get_forecast", "error": "params.days: must be <= 7"}


async def test_an_invalid_upstream_schema_leaves_validation_to_the_upstream() -> None:
    async with weather_domain() as weather:
        envelope = await weather.dispatch({"cmd": "broken_schema", "params": {"n": "x"}})
        assert envelope["data"] == 'broken_schema: {"n": "x"}'


async def test_an_upstream_tool_error_is_a_failed_envelope() -> None:
    async with weather_domain() as weather:
        envelope = await weather.dispatch({"cmd": "get_forecast", "params": {"city": "Atlantis"}})
        assert envelope == {"ok": False, "cmd": "get_forecast", "error": "unknown city"}


async def test_help_lists_commands_and_gives_schemas_at_full() -> None:
    async with weather_domain() as weather:
        minimal = await weather.dispatch({"cmd": "help", "detail": "minimal"})
        assert minimal["data"] == [
            {"name": "get_forecast"},
            {"name": "Get-Alerts"},
            {"name": "broken_schema"},
        ]
        assert minimal["count"] == 3
        standard = await weather.dispatch({"cmd": "help", "params": {"command": "GET_FORECAST"}})
        assert standard["data"] == [
            {
                "name": "get_forecast",
                "description": "Get the weather forecast for a city. Answers in metric units.",
                "args": "city, days?",
            }
        ]
        full = await weather.dispatch({"cmd": "help", "detail": "full", "params": {"command": "get_forecast"}})
        assert full["data"][0]["inputSchema"] == WEATHER_TOOLS[0].input_schema
        unknown = await weather.dispatch({"cmd": "help", "params": {"command": "rain"}})
        assert (
            unknown["error"]
            == "params.command: no command 'rain'; valid commands: get_forecast, Get-Alerts, broken_schema"
        )


async def test_an_upstream_tool_named_help_keeps_its_name() -> None:
    async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"upstream {name}")])

    domain = build_upstream_domain("x", [types.Tool(name="help", input_schema={"type": "object"})], call)
    assert (await domain.dispatch({"cmd": "help"}))["data"] == "upstream help"
    assert (await domain.dispatch({"cmd": "_help", "detail": "minimal"}))["data"] == [{"name": "help"}]


async def test_a_failing_connection_is_an_envelope_not_an_exception() -> None:
    async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        raise UpstreamClosedError("x", "session closed while calling " + name)

    domain = build_upstream_domain("x", [types.Tool(name="t", input_schema={"type": "object"})], call)
    assert await domain.dispatch({"cmd": "t"}) == {
        "ok": False,
        "cmd": "t",
        "error": "x: session closed while calling t",
    }


def test_tools_sharing_a_name_ignoring_case_are_refused() -> None:
    async def call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        raise AssertionError("not called")

    twins = [types.Tool(name=n, input_schema={"type": "object"}) for n in ("a", "A")]
    with pytest.raises(ValueError, match="duplicate command"):
        build_upstream_domain("x", twins, call)
