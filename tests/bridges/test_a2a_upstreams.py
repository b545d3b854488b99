"""An A2A agent built with a2a-sdk's own server pieces behind the gateway, through the SDK
client in both eras: its skills as tools, a plain reply, a task that reports progress
while it works, and a task that fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.settings import ServerConfig
from tests.bridges.a2a_agent import TravelExecutor, build_agent_app
from tests.bridges.asgi_serving import serve_built
from tests.conftest import running_gateway, settings_for

ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


@asynccontextmanager
async def travel_gateway(executor: TravelExecutor, mode: str = "auto") -> AsyncIterator[tuple[Gateway, Client]]:
    async with (
        serve_built(lambda url: build_agent_app(url, executor)) as base,
        running_gateway(settings_for(ServerConfig(name="travel", transport="a2a", base_url=base)), mode=mode) as (
            gateway,
            client,
        ),
    ):
        yield gateway, client


@ERAS
async def test_each_skill_of_the_agent_card_is_a_tool_and_a_plain_reply_is_text(mode: str) -> None:
    async with travel_gateway(TravelExecutor(), mode) as (_, client):
        tools = {t.name: t for t in (await client.list_tools()).tools if t.name.startswith("travel__")}
        hello = await client.call_tool("travel__greet", {"message": "hi there"})
    assert set(tools) == {"travel__greet", "travel__plan_trip", "travel__book_flight"}
    plan = tools["travel__plan_trip"]
    assert plan.description.startswith("Plan a trip: Plans a trip to a city, step by step.")
    assert "Plan three days in Lisbon" in plan.description
    assert plan.input_schema["required"] == ["message"]
    assert not hello.is_error
    assert [block.text for block in hello.content] == ["Hello! You said: hi there"]


@ERAS
async def test_a_task_reports_progress_while_it_works_and_answers_its_artifacts(mode: str) -> None:
    proceed = asyncio.Event()
    seen: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        proceed.set()  # the agent waits for this: the first step reached us before the answer

    async with travel_gateway(TravelExecutor(proceed), mode) as (_, client):
        with anyio.fail_after(20):
            answer = await client.call_tool(
                "travel__plan_trip", {"message": "three days in Lisbon"}, progress_callback=progress
            )
    assert seen == ["Looking at the map", "Choosing hotels"]
    assert not answer.is_error
    assert [block.text for block in answer.content] == ["Itinerary for: three days in Lisbon"]
    assert answer.structured_content == {"days": 3, "city": "Lisbon"}


@ERAS
async def test_a_failed_task_is_a_tool_error_with_the_agents_reason(mode: str) -> None:
    async with travel_gateway(TravelExecutor(), mode) as (_, client):
        answer = await client.call_tool("travel__book_flight", {"message": "LIS to OSL"})
    assert answer.is_error
    assert answer.content[0].text == "The agent's task failed: No seats left on that flight."


async def test_an_agent_without_a_card_puts_the_server_in_error_naming_base_url() -> None:
    config = ServerConfig(name="travel", transport="a2a", base_url="http://127.0.0.1:9/nothing", connect_timeout_secs=5)
    async with running_gateway(settings_for(config)) as (gateway, _):
        message = gateway.supervisors["travel"].error_message
    assert message is not None
    assert "base_url: no usable agent card at http://127.0.0.1:9/nothing" in message


async def test_an_agent_that_does_not_stream_answers_with_the_finished_task() -> None:
    executor = TravelExecutor()
    async with (
        serve_built(lambda url: build_agent_app(url, executor, streaming=False)) as base,
        running_gateway(settings_for(ServerConfig(name="travel", transport="a2a", base_url=base))) as (_, client),
    ):
        answer = await client.call_tool("travel__plan_trip", {"message": "a weekend in Porto"})
        failed = await client.call_tool("travel__book_flight", {"message": "OPO to LIS"})
    assert [block.text for block in answer.content] == ["Itinerary for: a weekend in Porto"]
    assert answer.structured_content == {"days": 3, "city": "Lisbon"}
    assert answer.meta is not None and answer.meta["a2a"]["state"] == "TASK_STATE_COMPLETED"
    assert failed.is_error and "No seats left" in failed.content[0].text
