"""The passthrough endpoint: every upstream tool, resource and prompt through one MCP server.

The tests that change nothing share one gateway per set of upstreams (each gateway start costs a
stdio upstream process per server and over a second of CPU); each connects a client of its own.
A test that changes a gateway, or needs settings of its own, starts its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.catalog import CLIENT_SAFE
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.settings import Settings
from tests.conftest import (
    npm_server,
    pypi_server,
    running_gateway,
    serving_gateway,
    settings_for,
    stdio_fixture,
    writes,
)
from tests.held import held
from tests.http_serving import served_over_http

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""

Shared = tuple[Gateway, GatewayServer]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[Shared]:
    """A gateway over the ``alpha`` fixture upstream alone, with its MCP server."""
    async with held(serving_gateway(settings_for(stdio_fixture("alpha")))) as both:
        yield both


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha_and_beta() -> AsyncIterator[Shared]:
    """A gateway over two fixture upstreams with the same tools, prompts and resources."""
    async with held(serving_gateway(settings_for(stdio_fixture("alpha"), stdio_fixture("beta")))) as both:
        yield both


def client_of(shared: Shared, mode: str = "auto") -> Client:
    return Client(shared[1].server, mode=mode, cache=None)


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_passthrough_lists_every_upstream_tool_with_its_definition_intact(
    mode: str, alpha_and_beta: Shared
) -> None:
    gateway = alpha_and_beta[0]
    async with client_of(alpha_and_beta, mode) as client:
        listed = (await client.list_tools()).tools
        names = [t.name for t in listed]
        assert "alpha__search" in names and "beta__search" in names, "same tool on two servers never collides"
        assert all(CLIENT_SAFE.match(n) for n in names)
        upstream = {t.name: t for t in gateway.supervisors["alpha"].connection.tools}  # type: ignore[union-attr]
        add = next(t for t in listed if t.name == "alpha__add")
        assert add.input_schema == upstream["add"].input_schema
        assert add.output_schema == upstream["add"].output_schema
        assert add.description == upstream["add"].description
        echo = next(t for t in listed if t.name == "alpha__echo")
        assert echo.annotations == upstream["echo"].annotations
        dotted = [n for n in names if n.startswith("alpha__api_v2_create")]
        assert len(dotted) == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calls_are_routed_with_structured_content_and_is_error_as_given(mode: str, alpha: Shared) -> None:
    async with client_of(alpha, mode) as client:
        added = await client.call_tool("alpha__add", {"a": 2, "b": 3})
        assert added.structured_content == {"total": 5}
        assert not added.is_error
        failed = await client.call_tool("alpha__fail", {"message": "x"})
        assert failed.is_error
        assert text_of(await client.call_tool("alpha__echo", {"text": "hi"})) == "hi"


async def test_unknown_tool_is_a_json_rpc_error_naming_it(alpha: Shared) -> None:
    async with client_of(alpha) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("alpha__nope", {})
        assert info.value.error.code == -32602
        assert info.value.error.message == "Tool not found: alpha__nope"


async def test_progress_notifications_are_relayed_to_the_client(alpha: Shared) -> None:
    async with client_of(alpha) as client:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        result = await client.call_tool("alpha__progress", {"steps": 3}, progress_callback=on_progress)
        assert text_of(result) == "done after 3 steps"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_cancelling_a_downstream_call_cancels_it_upstream(alpha: Shared) -> None:
    gateway = alpha[0]
    async with client_of(alpha) as client:
        connection = gateway.supervisors["alpha"].connection
        assert connection is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "alpha__hang", {})
            await gateway.wait_until(lambda: connection.pending_requests > 0, timeout_secs=10)
            tg.cancel_scope.cancel()
        await gateway.wait_until(lambda: connection.pending_requests == 0, timeout_secs=10)
        assert text_of(await client.call_tool("alpha__echo", {"text": "ok"})) == "ok"


async def test_dead_upstream_gives_a_clear_error_and_the_other_keeps_serving() -> None:
    # A gateway of its own: this test crashes one of its upstreams.
    settings = settings_for(stdio_fixture("alpha"), stdio_fixture("beta"))
    async with running_gateway(settings) as (_gateway, client):
        with pytest.raises(MCPError) as info:
            await client.call_tool("alpha__crash", {})
        assert info.value.error.code == -32003
        assert "alpha" in info.value.error.message
        assert text_of(await client.call_tool("beta__echo", {"text": "fine"})) == "fine"


async def test_resources_and_prompts_pass_through_namespaced(alpha_and_beta: Shared) -> None:
    async with client_of(alpha_and_beta) as client:
        uris = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        assert uris == ["aggregator+alpha:fixture://greeting", "aggregator+beta:fixture://greeting"]
        read = await client.read_resource("aggregator+beta:fixture://greeting")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents) and content.text == "hello from beta"
        prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert prompts == ["alpha__ask", "beta__ask"]
        prompt = await client.get_prompt("beta__ask", {"topic": "tides"})
        message = prompt.messages[0].content
        assert isinstance(message, types.TextContent) and "tides" in message.text


async def test_real_pypi_and_npm_upstreams_behind_one_endpoint(tmp_path: Path) -> None:
    settings = settings_for(
        pypi_server("time", "mcp-server-time", "--local-timezone", "UTC"),
        npm_server(
            "memory",
            "mcp-server-memory",
            env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
            sandbox=writes(tmp_path),
        ),
        npm_server("everything", "mcp-server-everything", "stdio"),
    )
    async with running_gateway(settings) as (gateway, client):
        assert gateway.supervisors["time"].connection.protocol_version == "2026-07-28"  # type: ignore[union-attr]
        assert gateway.supervisors["memory"].connection.protocol_version == "2025-11-25"  # type: ignore[union-attr]
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"time__get_current_time", "memory__create_entities", "everything__echo"} <= names
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert '"timezone": "UTC"' in text_of(now)
        await client.call_tool(
            "memory__create_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]},
        )
        found = await client.call_tool("memory__search_nodes", {"query": "Ada"})
        assert "wrote programs" in text_of(found)
        echoed = await client.call_tool("everything__echo", {"message": "via gateway"})
        assert "via gateway" in text_of(echoed)


@asynccontextmanager
async def http_gateway(settings: Settings, *, stateless: bool = False) -> AsyncIterator[tuple[Gateway, str]]:
    async with served_over_http(settings, stateless=stateless) as served:
        yield served.gateway, served.mcp_url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def over_http() -> AsyncIterator[dict[bool, str]]:
    """``stateless`` -> the ``/mcp`` URL of a gateway over ``alpha`` served over HTTP so."""
    async with (
        held(http_gateway(settings_for(stdio_fixture("alpha")), stateless=False)) as (_, stateful),
        held(http_gateway(settings_for(stdio_fixture("alpha")), stateless=True)) as (_, stateless),
    ):
        yield {False: stateful, True: stateless}


@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_streamable_http_endpoint_serves_both_protocol_eras(
    mode: str, stateless: bool, over_http: dict[bool, str]
) -> None:
    async with Client(over_http[stateless], mode=mode, cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "alpha__echo" in names
        assert text_of(await client.call_tool("alpha__echo", {"text": "over http"})) == "over http"
