"""Server→client requests through the gateway, in both protocol eras on both sides.

The upstream (tests/upstream/callbacks_server.py) asks back during a call: as real
requests when it speaks 2025-11-25, as ``InputRequiredResult`` when it speaks 2026-07-28.
The client is a real SDK ``Client`` that declares the callbacks. Every pairing must give
the answer a direct connection gives, including the two bridged ones.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.session import ClientRequestContext

from mcp_aggregator.relay.parked_calls import is_parked_state
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO, serving_gateway, settings_for
from tests.held import held
from tests.upstream.callbacks_server import build_server

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""

EXPECTED = {
    "ask_llm": "llm said: 4",
    "ask_user": 'user accept: {"name": "Ada"}',
    "ask_url": "user accept: null",
    "my_roots": "roots: file:///work/project",
    "two_rounds": "Ada Ada",
    "plain": "plain answer",
}


class ClientSide:
    """A client's callbacks, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logs: list[str] = []

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked.append("sampling")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="4"), model="test-model")

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if isinstance(params, types.ElicitRequestURLParams):
            self.asked.append(f"url:{params.url}")
            return types.ElicitResult(action="accept")
        self.asked.append(f"form:{params.message}")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(str(params.data))

    def client(self, target: Any, mode: str, **extra: Any) -> Client:
        return Client(
            target,
            mode=mode,
            cache=None,
            sampling_callback=self.sampling,
            elicitation_callback=self.elicitation,
            list_roots_callback=self.roots,
            logging_callback=self.log,
            **extra,
        )


def callbacks_upstream(protocol: str) -> ServerConfig:
    return ServerConfig(
        name="cb",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.callbacks_server", "stdio"),
        cwd=str(REPO),
        protocol=protocol,  # type: ignore[arg-type]
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def callbacks_gateways() -> AsyncIterator[dict[str, GatewayServer]]:
    """A gateway over the callbacks upstream in each era, by era, shared by the tests that
    only call tools: each question goes back to the client that made the call, so a test's
    client sees nothing a neighbour's calls ask. The tests of logging and subscriptions
    (state an upstream session keeps) start gateways of their own."""
    async with (
        held(serving_gateway(settings_for(callbacks_upstream("legacy")))) as (_, legacy),
        held(serving_gateway(settings_for(callbacks_upstream("auto")))) as (_, auto),
    ):
        yield {"legacy": legacy, "auto": auto}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def facades_gateway() -> AsyncIterator[GatewayServer]:
    """A gateway exposing the facades over the handshake-era callbacks upstream."""
    settings = settings_for(callbacks_upstream("legacy"), exposure="facades")
    async with held(serving_gateway(settings)) as (_, gateway_server):
        yield gateway_server


def text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_fixture_answers_directly_in_both_eras(mode: str) -> None:
    side = ClientSide()
    async with side.client(build_server(), mode) as client:
        for tool, expected in EXPECTED.items():
            assert text(await client.call_tool(tool, {})) == expected


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
@pytest.mark.parametrize("client_era", ["legacy", "auto"])
async def test_every_input_request_reaches_the_calling_client_in_every_era_pairing(
    upstream_era: str, client_era: str, callbacks_gateways: dict[str, GatewayServer]
) -> None:
    side = ClientSide()
    async with side.client(callbacks_gateways[upstream_era].server, client_era) as client:
        for tool, expected in EXPECTED.items():
            assert text(await client.call_tool(f"cb__{tool}", {})) == expected, tool
    assert side.asked == [
        "sampling",
        "form:Your name?",
        "url:https://example.com/login",
        "roots",
        "form:First name?",
        "form:Last name?",
    ]


async def test_a_modern_client_gets_the_request_state_of_a_tool_that_asks_the_modern_way_untouched() -> None:
    """The gateway first offers such a call to its 2025-11-25 side session, which refuses a
    tool that answers ``InputRequiredResult``; the call then goes to the 2026-07-28 session and
    the upstream's own ``requestState`` reaches the client as it is (no parking)."""
    side = ClientSide()
    mrtr = ServerConfig(
        name="mrtr",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.mrtr_server", "--transport", "stdio"),
        cwd=str(REPO),
    )
    async with (
        serving_gateway(settings_for(mrtr)) as (_, gateway_server),
        side.client(gateway_server.server, "auto") as client,
    ):
        first = await client.session.call_tool("mrtr__mrtr_two_rounds", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state is not None and not is_parked_state(first.request_state)
        answer = types.ElicitResult(action="accept", content={"name": "Grace"})
        second = await client.session.call_tool(
            "mrtr__mrtr_two_rounds",
            {},
            input_responses={"name": answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, types.InputRequiredResult) and second.input_requests is not None
        assert second.request_state is not None and not is_parked_state(second.request_state)
        assert list(second.input_requests) == ["greeting"]


async def test_a_modern_client_is_asked_a_dual_era_upstreams_session_question_as_input_required(
    callbacks_gateways: dict[str, GatewayServer],
) -> None:
    """A tool of both eras that asks through its session at 2025-11-25 is called on the side
    session; a modern client gets its question as ``InputRequiredResult`` (the gateway's state)."""
    side = ClientSide()
    async with side.client(callbacks_gateways["auto"].server, "auto") as client:
        first = await client.session.call_tool("cb__two_rounds", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.input_requests is not None
        [(key, request)] = first.input_requests.items()
        assert isinstance(request, types.ElicitRequest)
        answer = types.ElicitResult(action="accept", content={"name": "Grace"})
        second = await client.session.call_tool(
            "cb__two_rounds",
            {},
            input_responses={key: answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, types.InputRequiredResult) and second.input_requests is not None
        [(key, request)] = second.input_requests.items()
        final = await client.session.call_tool(
            "cb__two_rounds",
            {},
            input_responses={key: answer},
            request_state=second.request_state,
            allow_input_required=True,
        )
        assert isinstance(final, types.CallToolResult)
        assert text(final) == "Grace Grace"


async def test_a_modern_client_is_asked_a_legacy_upstreams_question_as_input_required(
    callbacks_gateways: dict[str, GatewayServer],
) -> None:
    side = ClientSide()
    async with side.client(callbacks_gateways["legacy"].server, "auto") as client:
        first = await client.session.call_tool("cb__ask_user", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        [(key, request)] = first.input_requests.items()
        assert isinstance(request, types.ElicitRequest)
        answer = types.ElicitResult(action="accept", content={"name": "Lin"})
        final = await client.session.call_tool(
            "cb__ask_user",
            {},
            input_responses={key: answer},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(final, types.CallToolResult)
        assert text(final) == 'user accept: {"name": "Lin"}'


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
@pytest.mark.parametrize("client_era", ["legacy", "auto"])
async def test_a_client_without_the_capability_makes_the_upstream_see_the_proper_error(
    upstream_era: str, client_era: str, callbacks_gateways: dict[str, GatewayServer]
) -> None:
    async with Client(callbacks_gateways[upstream_era].server, mode=client_era, cache=None) as client:
        with pytest.raises(Exception) as info:
            result = await client.call_tool("cb__ask_llm", {})
            assert result.is_error  # the upstream turned the refusal into a tool error
            raise RuntimeError(text_of_error(result))
        assert "Sampling not supported" in str(info.value)


@pytest.mark.parametrize("client_era", ["legacy", "auto"])
async def test_facade_execute_relays_sampling_to_the_client(client_era: str, facades_gateway: GatewayServer) -> None:
    side = ClientSide()
    async with side.client(facades_gateway.server, client_era) as client:
        result = await client.call_tool("tools", {"cmd": "execute", "params": {"name": "cb.ask_llm", "arguments": {}}})
        assert '"llm said: 4"' in text(result) or "llm said: 4" in text(result)
    assert side.asked == ["sampling"]


async def test_upstream_log_messages_reach_the_calling_client() -> None:
    side = ClientSide()
    settings = settings_for(callbacks_upstream("legacy"))
    async with (
        serving_gateway(settings) as (_, gateway_server),
        side.client(gateway_server.server, "legacy") as client,
    ):
        assert text(await client.call_tool("cb__chatty", {})) == "logged 3 lines"
    assert side.logs == ["line 0", "line 1", "line 2"]


async def test_a_modern_client_gets_logs_only_when_it_opted_in() -> None:
    quiet, opted = ClientSide(), ClientSide()
    settings = settings_for(callbacks_upstream("auto"))
    async with serving_gateway(settings) as (_, gateway_server):
        server = gateway_server.server
        async with quiet.client(server, "auto") as client:
            assert text(await client.call_tool("cb__chatty", {})) == "logged 3 lines"
        async with opted.client(server, "auto", log_level="info") as client:
            assert text(await client.call_tool("cb__chatty", {})) == "logged 3 lines"
    assert quiet.logs == []
    assert opted.logs == ["line 0", "line 1", "line 2"]


def text_of_error(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_a_resource_subscription_is_forwarded_and_its_updates_reach_the_subscriber() -> None:
    updates: list[str] = []
    got_update = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            got_update.set()

    settings = settings_for(callbacks_upstream("legacy"))
    async with (
        serving_gateway(settings) as (_, gateway_server),
        Client(gateway_server.server, mode="legacy", cache=None, message_handler=on_message) as client,
    ):
        subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri="cb://counter"))
        await client.session.send_request(subscribe, types.EmptyResult)
        assert "subscribers: ['cb://counter']" in text(await client.call_tool("cb__bump", {}))
        with anyio.fail_after(10):
            await got_update.wait()
        unsubscribe = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri="cb://counter"))
        await client.session.send_request(unsubscribe, types.EmptyResult)
        assert "subscribers: []" in text(await client.call_tool("cb__bump", {}))
    assert updates == ["cb://counter"]
