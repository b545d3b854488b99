"""Tools listed beside the facades (``facades.pinned`` / ``frequent``) through a real MCP client.

A real gateway over the fixture server as a stdio subprocess, served in facade mode, and an
SDK client: the listed tools are called by their listed names through the same pipeline
(the audit records them), and a new most called tool reaches the client with
``notifications/tools/list_changed``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.audit import AuditEntry, AuditQuery, Outcome
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.profile_servers import ProfileServers
from tests.conftest import running_gateway, serving_gateway, settings_for, stdio_fixture

CORE = ["mcp__proxy__aggregator__query", "tools", "servers", "aggregator", "alpha"]


def facade_settings(facades: dict[str, Any]) -> Any:
    return settings_for(stdio_fixture("alpha"), exposure="facades", sections={"facades": facades})


async def audited(gateway: Gateway, tool: str) -> list[str]:
    assert gateway.audit is not None
    await gateway.audit.flush()
    page = await gateway.audit.log.query(AuditQuery(server="alpha", tool=tool))
    return [entry.outcome.value for entry in page.items]


async def test_pinned_tools_are_listed_beside_the_facades_and_called_through_the_pipeline() -> None:
    settings = facade_settings({"pinned": ["alpha.echo", "alpha.add"]})
    async with running_gateway(settings) as (gateway, client):
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == [*CORE, "alpha__echo", "alpha__add"]
        echo = next(tool for tool in tools if tool.name == "alpha__echo")
        assert echo.description == "Echo the text back."
        assert echo.input_schema["required"] == ["text"]

        result = await client.call_tool("alpha__echo", {"text": "hi"})
        assert not result.is_error
        assert result.content[0].text == "hi"  # type: ignore[union-attr]
        assert await audited(gateway, "echo") == ["ok"]


async def test_a_tool_that_is_neither_pinned_nor_frequent_is_not_callable_by_its_passthrough_name() -> None:
    async with running_gateway(facade_settings({"pinned": ["alpha.echo"]})) as (_, client):
        with pytest.raises(MCPError, match="alpha__add"):
            await client.call_tool("alpha__add", {"a": 1, "b": 2})


async def test_a_pin_its_server_does_not_serve_is_left_out_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    async with running_gateway(facade_settings({"pinned": ["alpha.nothing", "alpha.echo"]})) as (_, client):
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == [*CORE, "alpha__echo"]
    assert "facades.pinned: server 'alpha' has no tool 'nothing'" in caplog.text


async def test_the_operator_words_the_facades_descriptions() -> None:
    settings = facade_settings({"descriptions": {"tools": "Every tool of the team's servers: search, then execute."}})
    async with running_gateway(settings) as (_, client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    description = tools["tools"].description or ""
    assert description.startswith("Every tool of the team's servers: search, then execute.\nCommands")
    assert "execute" in description


async def test_the_most_executed_tool_is_listed_and_the_client_told_the_list_changed() -> None:
    settings = facade_settings({"frequent": 1, "frequent_refresh_secs": 0.05})
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with (
        serving_gateway(settings) as (gateway, gateway_server),
        Client(gateway_server.server, mode="legacy", cache=None, message_handler=on_message) as client,
    ):
        assert [tool.name for tool in (await client.list_tools()).tools] == CORE
        for a in range(3):
            executed = await client.call_tool(
                "tools", {"cmd": "execute", "params": {"name": "alpha.add", "arguments": {"a": a, "b": 1}}}
            )
            assert not executed.is_error
        echo = {"name": "alpha.echo", "arguments": {"text": "x"}}
        await client.call_tool("tools", {"cmd": "execute", "params": echo})
        assert gateway.audit is not None
        await gateway.audit.flush()
        with anyio.fail_after(10):
            await changed.wait()
        assert [tool.name for tool in (await client.list_tools()).tools] == [*CORE, "alpha__add"]
        added = await client.call_tool("alpha__add", {"a": 40, "b": 2})
        assert added.structured_content == {"total": 42}


async def test_each_profile_lists_its_own_most_executed_tools_and_only_pins_within_its_slice() -> None:
    sections = {
        "profiles": [{"name": "narrow", "tools": ["alpha.echo", "alpha.add"]}],
        "facades": {"pinned": ["alpha.pid"], "frequent": 1},
    }
    settings = settings_for(stdio_fixture("alpha"), exposure="facades", sections=sections)
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(30)
        assert gateway.audit is not None
        now = datetime.now(UTC)
        calls = [("default", "echo"), ("default", "echo"), ("narrow", "add"), ("narrow", "add"), ("narrow", "echo")]
        await gateway.audit.log.insert(
            [
                AuditEntry(now, None, profile, "tools/call", "alpha", tool, Outcome.OK, 1.0, None)
                for profile, tool in calls
            ]
        )
        servers = ProfileServers(gateway)
        listed: dict[str, list[str]] = {}
        async with anyio.create_task_group() as tg:
            await tg.start(servers.run)
            for profile in ("default", "narrow"):
                async with Client(servers.get(profile).server, cache=None) as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                listed[profile] = [name for name in names if name.startswith("alpha__")]
            tg.cancel_scope.cancel()
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()
    assert listed == {"default": ["alpha__pid", "alpha__echo"], "narrow": ["alpha__add"]}
