"""What ``tools/list`` shows in each exposure mode, and the aggregator contract tool in every mode.

The tests that change nothing share one gateway per exposure mode over two fixture upstreams
(each gateway start costs a stdio upstream process per server and over a second of CPU); each
connects a client of its own. A test that changes a gateway, or needs settings of its own,
starts its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.aggregate import (
    QUERY_TOOL_DESCRIPTION,
    QUERY_TOOL_INPUT_SCHEMA,
    QUERY_TOOL_NAME,
    QUERY_TOOL_OUTPUT_SCHEMA,
)
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import UpstreamDomains
from mcp_aggregator.settings import Settings
from mcp_aggregator.settings.serve_settings import FacadeGrouping
from tests.conftest import running_gateway, serving_gateway, settings_for, stdio_fixture
from tests.held import held

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""

EXAMPLE_QUERY = {"query": "How do I implement React hooks for state management?", "maxResults": 20}
CORE = [QUERY_TOOL_NAME, "tools", "servers", "aggregator"]


def wire(tools: list[types.Tool]) -> str:
    """``tools/list`` as JSON, the way a client would forward it to a model."""
    return json.dumps([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools])


async def listed(client: Client) -> list[types.Tool]:
    return (await client.list_tools()).tools


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    envelope: dict[str, Any] = json.loads(block.text)
    return envelope


async def indexed(gateway: Gateway) -> None:
    await gateway.wait_until(gateway.index_ready, timeout_secs=10)


def two_fixtures(exposure: str, **serve: Any) -> Settings:
    return settings_for(stdio_fixture("alpha"), stdio_fixture("beta"), exposure=exposure, **serve)


Shared = dict[str, tuple[Gateway, GatewayServer]]
"""exposure mode -> a gateway over ``alpha`` and ``beta`` in that mode, with its MCP server."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[Shared]:
    async with AsyncExitStack() as stack:
        modes = ("facades", "passthrough", "search")
        yield {mode: await stack.enter_async_context(held(serving_gateway(two_fixtures(mode)))) for mode in modes}


def client_of(shared: Shared, exposure: str) -> Client:
    return Client(shared[exposure][1].server, mode="auto", cache=None)


# -- tools/list per mode ----------------------------------------------------------------------


async def test_facades_mode_lists_the_contract_tool_the_core_domains_and_one_domain_per_server(shared: Shared) -> None:
    async with client_of(shared, "facades") as client:
        first = await listed(client)
        assert [tool.name for tool in first] == [*CORE, "alpha", "beta"]
        assert wire(await listed(client)) == wire(first)
        alpha = first[4]
        assert alpha.description is not None
        assert alpha.description.startswith("The tools of MCP server alpha.\nCommands (cmd; args go in params):\n")
        assert "echo(text): Echo the text back." in alpha.description
        assert alpha.input_schema["required"] == ["cmd"]


async def test_facades_mode_tools_list_is_identical_across_two_gateways(shared: Shared) -> None:
    async with client_of(shared, "facades") as client:
        first = wire(await listed(client))
    async with running_gateway(two_fixtures("facades")) as (_gateway, client):
        second = wire(await listed(client))
    assert first == second


async def test_facades_without_upstream_domains_lists_only_the_core_and_files_when_roots_are_set(
    tmp_path: Path,
) -> None:
    settings = two_fixtures("facades", upstream_domains=False, workspace_roots=[str(tmp_path)])
    async with running_gateway(settings) as (_gateway, client):
        assert [tool.name for tool in await listed(client)] == [*CORE, "files"]


async def test_passthrough_mode_lists_the_contract_tool_then_every_upstream_tool(shared: Shared) -> None:
    gateway = shared["passthrough"][0]
    async with client_of(shared, "passthrough") as client:
        first = await listed(client)
        exposed = [entry.exposed for entry in gateway.catalog.entries]
        assert [tool.name for tool in first] == [QUERY_TOOL_NAME, *exposed]
        assert len(first) == 1 + len(gateway.catalog) and "alpha__echo" in exposed and "beta__echo" in exposed
        assert wire(await listed(client)) == wire(first)
        added = await client.call_tool("alpha__add", {"a": 1, "b": 1})
        assert added.structured_content == {"total": 2}


async def test_search_mode_lists_only_the_contract_tool_and_the_tools_domain(shared: Shared) -> None:
    async with client_of(shared, "search") as client:
        first = await listed(client)
        assert [tool.name for tool in first] == [QUERY_TOOL_NAME, "tools"]
        assert wire(await listed(client)) == wire(first)
        ran = envelope_of(
            await client.call_tool(
                "tools", {"cmd": "execute", "params": {"name": "beta.add", "arguments": {"a": 1, "b": 2}}}
            )
        )
        assert ran == {"ok": True, "cmd": "execute", "data": {"total": 3}}
        with pytest.raises(MCPError):
            await client.call_tool("servers", {"cmd": "list"})


async def test_an_upstream_server_named_like_a_core_domain_is_served_with_a_server_suffix() -> None:
    settings = settings_for(stdio_fixture("tools"), stdio_fixture("files"), exposure="facades")
    async with running_gateway(settings) as (_gateway, client):
        assert [tool.name for tool in await listed(client)] == [*CORE, "files_server", "tools_server"]
        facade = envelope_of(await client.call_tool("tools", {"cmd": "list", "detail": "minimal"}))
        assert facade["ok"] and facade["data"]["items"][0] == {"name": "files.echo", "server": "files"}
        upstream = envelope_of(await client.call_tool("tools_server", {"cmd": "add", "params": {"a": 2, "b": 2}}))
        assert upstream == {"ok": True, "cmd": "add", "data": {"total": 4}}


async def test_skill_grouping_serves_one_domain_per_skill_and_follows_reclassification() -> None:
    async with running_gateway(two_fixtures("facades", facade_grouping="skill")) as (gateway, client):
        await indexed(gateway)
        assert [tool.name for tool in await listed(client)] == [*CORE, "general"]
        gateway.search.set_skills("alpha.echo", ["text"])
        gateway.search.set_skills("beta.echo", ["text", "other"])
        gateway.search.set_skills("beta.add", ["tools"])
        assert [tool.name for tool in await listed(client)] == [*CORE, "general", "text", "tools_skill"]
        helped = envelope_of(await client.call_tool("text", {"cmd": "help", "detail": "minimal"}))
        assert helped["data"] == [{"name": "alpha.echo"}, {"name": "beta.echo"}]
        echoed = envelope_of(await client.call_tool("text", {"cmd": "beta.echo", "params": {"text": "hi"}}))
        assert echoed == {"ok": True, "cmd": "beta.echo", "data": "hi"}
        added = envelope_of(await client.call_tool("tools_skill", {"cmd": "beta.add", "params": {"a": 1, "b": 1}}))
        assert added["data"] == {"total": 2}
        general = envelope_of(await client.call_tool("general", {"cmd": "help", "detail": "minimal"}))
        assert {"name": "alpha.add"} in general["data"] and {"name": "alpha.echo"} not in general["data"]


async def test_upstream_domains_follow_servers_leaving_and_tools_appearing() -> None:
    async with running_gateway(two_fixtures("facades")) as (gateway, client):
        await gateway.disconnect_server(gateway.ids["beta"])
        assert [tool.name for tool in await listed(client)] == [*CORE, "alpha"]
        with pytest.raises(MCPError):
            await client.call_tool("beta", {"cmd": "help"})

        grown = envelope_of(await client.call_tool("alpha", {"cmd": "grow", "params": {"name": "fresh"}}))
        assert grown["ok"], grown

        await gateway.wait_until(lambda: gateway.catalog.get("alpha.fresh") is not None, timeout_secs=10)
        alpha = next(tool for tool in await listed(client) if tool.name == "alpha")
        assert alpha.description is not None and "fresh(text?): A tool added at run time: fresh" in alpha.description
        fresh = envelope_of(await client.call_tool("alpha", {"cmd": "fresh", "params": {"text": "x"}}))
        assert fresh == {"ok": True, "cmd": "fresh", "data": "fresh: x"}

        await gateway.connect_server(gateway.ids["beta"])
        await gateway.wait_until(lambda: "beta" in gateway.exposed_servers(), timeout_secs=30)
        assert [tool.name for tool in await listed(client)] == [*CORE, "alpha", "beta"]


async def test_the_catalog_is_kept_over_a_change_that_exposes_nothing_new(shared: Shared) -> None:
    gateway, _server = shared["facades"]
    catalog = gateway.catalog
    gateway.catalogue.invalidate()
    assert gateway.catalog is catalog


async def test_a_servers_domain_is_reused_while_its_tools_stay_and_rebuilt_when_they_change() -> None:
    async with running_gateway(two_fixtures("facades")) as (gateway, client):
        domains = UpstreamDomains(gateway, FacadeGrouping.SERVER)
        alpha, _beta = domains.current()
        catalog = gateway.catalog
        await gateway.disconnect_server(gateway.ids["beta"])
        assert gateway.catalog is not catalog
        assert domains.current() == (alpha,)
        assert domains.current()[0] is alpha

        grown = envelope_of(await client.call_tool("alpha", {"cmd": "grow", "params": {"name": "fresh"}}))
        assert grown["ok"], grown
        await gateway.wait_until(lambda: gateway.catalog.get("alpha.fresh") is not None, timeout_secs=10)
        (regrown,) = domains.current()
        assert regrown is not alpha and regrown.command("fresh") is not None


# -- the aggregator contract tool (seed 000) ---------------------------------------------------


@pytest.mark.parametrize("exposure", ["facades", "passthrough", "search"])
async def test_the_contract_tool_is_listed_word_for_word_and_answers_the_example_request(
    exposure: str, shared: Shared
) -> None:
    async with client_of(shared, exposure) as client:
        tools = {tool.name: tool for tool in await listed(client)}
        contract = tools[QUERY_TOOL_NAME]
        assert contract.description == QUERY_TOOL_DESCRIPTION
        assert contract.input_schema == QUERY_TOOL_INPUT_SCHEMA
        assert contract.output_schema == QUERY_TOOL_OUTPUT_SCHEMA

        result = await client.call_tool(QUERY_TOOL_NAME, EXAMPLE_QUERY)
        assert not result.is_error and len(result.content) == 1
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        answer = json.loads(block.text)
        assert result.structured_content == answer
        assert set(answer) == {"results", "metadata"}
        assert answer["metadata"]["serversQueried"] == answer["metadata"]["serversSucceeded"] == 2
        assert answer["metadata"]["resultsReturned"] == len(answer["results"]) >= 1
        top = answer["results"][0]
        assert top["rank"] == 1 and top["server"] in ("alpha", "beta") and 0 <= top["relevanceScore"] <= 1
        assert top["content"].endswith("results for How do I implement React hooks for state management?")


async def test_the_contract_tool_refuses_max_results_out_of_range_with_invalid_params(shared: Shared) -> None:
    async with client_of(shared, "facades") as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(QUERY_TOOL_NAME, {"query": "hooks", "maxResults": 500})
        error = raised.value.error
        assert (error.code, error.message) == (-32602, "Invalid query parameters")
        assert error.data == {"field": "maxResults", "reason": "Must be between 10 and 100, got 500"}

        with pytest.raises(MCPError) as missing:
            await client.call_tool(QUERY_TOOL_NAME, {})
        assert missing.value.error.data == {"field": "query", "reason": "Required"}


async def test_the_contract_tool_reports_aggregation_failed_when_every_server_errors() -> None:
    failing = {name: {"queryTool": "fail", "queryArgument": "message"} for name in ("alpha", "beta")}
    settings = settings_for(
        stdio_fixture("alpha"), stdio_fixture("beta"), exposure="facades", sections={"aggregator": {"servers": failing}}
    )
    async with running_gateway(settings) as (_gateway, client):
        with pytest.raises(MCPError) as raised:
            await client.call_tool(QUERY_TOOL_NAME, EXAMPLE_QUERY)
        error = raised.value.error
        assert (error.code, error.message) == (-32603, "Aggregation failed: all servers unavailable")
        assert error.data == {
            "attemptedServers": ["alpha", "beta"],
            "errors": ["alpha: Error executing tool fail", "beta: Error executing tool fail"],
        }


async def test_the_contract_tool_reports_aggregation_failed_when_the_only_server_is_gone() -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"), exposure="search")) as (gateway, client):
        await gateway.disconnect_server(gateway.ids["alpha"])
        with pytest.raises(MCPError) as raised:
            await client.call_tool(QUERY_TOOL_NAME, {"query": "anything", "servers": ["alpha"]})
        error = raised.value.error
        assert (error.code, error.message) == (-32603, "Aggregation failed: all servers unavailable")
        assert error.data == {"attemptedServers": ["alpha"], "errors": ["alpha: unavailable"]}
