"""Every name form reaches its upstream: tools, prompts, resources, templates, completion.

Seed 003 BR-005 routes by the exposed name, the canonical ``server.name`` and the
upstream's own name when exactly one exposed server has it (BR-009: several → an error
listing them). A resource URI one server owns is served unrewritten.

The tests that only read share a gateway per set of upstreams (each gateway start costs a stdio
upstream process per server and over a second of CPU); each test connects a client of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.serve.mcp_server import GatewayServer
from tests.conftest import running_gateway, serving_gateway, settings_for, stdio_fixture
from tests.held import held

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[GatewayServer]:
    """A gateway over the ``alpha`` fixture upstream alone."""
    async with held(serving_gateway(settings_for(stdio_fixture("alpha")))) as (_, gateway_server):
        yield gateway_server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha_and_beta() -> AsyncIterator[GatewayServer]:
    """A gateway over two fixture upstreams with the same tools, prompts and resources."""
    async with held(serving_gateway(settings_for(stdio_fixture("alpha"), stdio_fixture("beta")))) as (_, server):
        yield server


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tool_is_called_by_its_exposed_canonical_and_own_name(mode: str, alpha: GatewayServer) -> None:
    async with Client(alpha.server, mode=mode, cache=None) as client:
        for name in ("alpha__echo", "alpha.echo", "echo"):
            assert text_of(await client.call_tool(name, {"text": name})) == name


async def test_a_shared_own_name_is_refused_listing_its_servers(alpha_and_beta: GatewayServer) -> None:
    async with Client(alpha_and_beta.server, mode="auto", cache=None) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("echo", {"text": "x"})
        assert "ambiguous" in info.value.error.message
        assert "alpha, beta" in info.value.error.message
        assert text_of(await client.call_tool("beta.echo", {"text": "b"})) == "b"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_single_owners_resources_and_templates_pass_unrewritten(mode: str, alpha: GatewayServer) -> None:
    async with Client(alpha.server, mode=mode, cache=None) as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert uris == ["fixture://greeting"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["fixture://items/{item}"]
        read = await client.read_resource("fixture://greeting")
        assert [(str(c.uri), getattr(c, "text", None)) for c in read.contents] == [
            ("fixture://greeting", "hello from alpha")
        ]
        item = await client.read_resource("fixture://items/pear")
        assert getattr(item.contents[0], "text", None) == "alpha item pear"


async def test_a_shared_uri_is_namespaced_and_each_form_reads_its_owner(alpha_and_beta: GatewayServer) -> None:
    async with Client(alpha_and_beta.server, mode="auto", cache=None) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource("fixture://greeting")
        assert "alpha, beta" in info.value.error.message
        read = await client.read_resource("aggregator+beta:fixture://greeting")
        assert str(read.contents[0].uri) == "aggregator+beta:fixture://greeting"
        assert getattr(read.contents[0], "text", None) == "hello from beta"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_prompt_is_fetched_by_its_exposed_canonical_and_own_name(mode: str, alpha: GatewayServer) -> None:
    async with Client(alpha.server, mode=mode, cache=None) as client:
        listed = [p.name for p in (await client.list_prompts()).prompts]
        assert listed == ["alpha__ask"]
        for name in ("alpha__ask", "alpha.ask", "ask"):
            got = await client.get_prompt(name, {"topic": "relays"})
            content = got.messages[0].content
            assert isinstance(content, types.TextContent)
            assert content.text == "Tell me about relays"


async def test_an_unknown_prompt_or_resource_is_a_clear_error(alpha_and_beta: GatewayServer) -> None:
    async with Client(alpha_and_beta.server, mode="auto", cache=None) as client:
        with pytest.raises(MCPError, match="Prompt not found: nope"):
            await client.get_prompt("nope", {})
        with pytest.raises(MCPError, match="Resource not found: other://x"):
            await client.read_resource("other://x")


async def test_an_unlisted_uri_goes_to_the_only_server_with_resources_which_answers_itself(
    alpha: GatewayServer,
) -> None:
    async with Client(alpha.server, mode="auto", cache=None) as client:
        with pytest.raises(MCPError, match="Unknown resource"):
            await client.read_resource("other://x")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_completion_is_routed_by_its_prompt_or_template_reference(mode: str, alpha: GatewayServer) -> None:
    async with Client(alpha.server, mode=mode, cache=None) as client:
        prompt = await client.complete(types.PromptReference(name="alpha__ask"), {"name": "topic", "value": "m"})
        assert prompt.completion.values == ["mcp", "music", "maths"]
        template = await client.complete(
            types.ResourceTemplateReference(uri="fixture://items/{item}"), {"name": "item", "value": "ap"}
        )
        assert template.completion.values == ["apple", "apricot"]


async def test_a_call_while_its_server_reconnects_says_unavailable_not_unknown() -> None:
    # A gateway of its own: this test takes its upstream away.
    async with running_gateway(settings_for(stdio_fixture("alpha"))) as (gateway, client):
        supervisor = gateway.supervisors["alpha"]
        connection = supervisor.connection
        assert connection is not None
        await supervisor.disconnect(force=True)
        for name in ("alpha__echo", "alpha.echo"):
            with pytest.raises(MCPError) as info:
                await client.call_tool(name, {"text": "x"})
            assert info.value.error.code == -32003
            assert "alpha is unavailable" in info.value.error.message
