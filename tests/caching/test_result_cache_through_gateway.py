"""The opt-in tool result cache over real parts: a real upstream that counts the calls
reaching it, real SDK clients over HTTP (named by their tokens) and in process.

A second call within the TTL does not reach the upstream; another client's scope misses; an
error result and a call that asked the client back are never kept; the TTL runs on an
injected clock; the fast path leaves cacheable tools to the full pipeline (so both paths
give the same answer), the audit says ``cached`` and ``/metrics`` counts hits and misses."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_aggregator.caching import ResultCacheConfig
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import ServerConfig, Settings
from tests.audit.test_audit_through_gateway import audit_items, fast_path_of
from tests.conftest import REPO, settings_for, stdio_fixture
from tests.http_serving import served_over_http
from tests.relay.test_input_requests import ClientSide, callbacks_upstream

ADMIN = "audit-test-admin-token-0123456789"
ADA = "ada-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
DEADLINE = 30
CACHE = {"ttl_secs": 60, "tools": ["tally", "broken"]}


def tally_upstream(**extra: Any) -> ServerConfig:
    return ServerConfig(
        name="tally",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.tally_server", "--transport", "stdio"),
        cwd=str(REPO),
        **extra,
    )


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def client_of(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


@asynccontextmanager
async def in_process(settings: Settings, clock: FakeClock, side: ClientSide | None = None) -> AsyncIterator[Client]:
    async with Gateway(settings, cache_clock=clock) as gateway:
        await gateway.wait_settled(30)
        server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(server.run)
            target = server.server
            async with side.client(target, "auto") if side else Client(target, cache=None) as client:
                yield client
            tg.cancel_scope.cancel()


async def test_a_cached_result_spares_the_upstream_for_its_client_only_and_is_audited_and_counted() -> None:
    clients = [
        {"name": "ada", "token": ADA, "profiles": ["default"]},
        {"name": "bob", "token": BOB, "profiles": ["default"]},
    ]
    settings = settings_for(tally_upstream(cache=CACHE), sections={"clients": clients})
    async with served_over_http(settings, admin_token=ADMIN) as served:
        fast = fast_path_of(served.app)
        async with client_of(served.mcp_url, ADA) as ada, client_of(served.mcp_url, BOB) as bob:
            first = await ada.call_tool("tally__tally", {"label": "x"})
            again = await ada.call_tool("tally__tally", {"label": "x"})
            other = await ada.call_tool("tally__tally", {"label": "y"})
            bobs = await bob.call_tool("tally__tally", {"label": "x"})
            failures = [await ada.call_tool("tally__broken", {}) for _ in range(2)]
            assert fast.forwarded == 0, "the fast path leaves cacheable tools to the cache stage"
            reached = await ada.call_tool("tally__reached_calls", {})
            assert fast.forwarded == 1, "a tool the cache does not cover stays on the fast path"
        assert (text(first), text(again), text(other), text(bobs)) == ("x #1", "x #1", "y #2", "x #3")
        assert again.model_dump() == first.model_dump()
        assert [f.is_error for f in failures] == [True, True]
        assert "broken #4" in text(failures[0]) and "broken #5" in text(failures[1]), "errors are not kept"
        assert text(reached) == "5"

        assert served.gateway.audit is not None
        with anyio.fail_after(DEADLINE):
            await served.gateway.audit.flush()
        items = (await audit_items(served.base, tool="tally"))["items"][::-1]
        assert [(i["client"], i["outcome"], i.get("cached", False)) for i in items] == [
            ("ada", "ok", False),
            ("ada", "ok", True),
            ("ada", "ok", False),
            ("bob", "ok", False),
        ]
        async with httpx.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
            metrics = (await http.get("/metrics")).text
        assert 'mcp_aggregator_tool_cache_hits_total{server="tally"} 1' in metrics
        assert 'mcp_aggregator_tool_cache_misses_total{server="tally"} 5' in metrics


async def test_a_cached_result_expires_after_its_ttl_on_the_injected_clock() -> None:
    clock = FakeClock()
    async with in_process(settings_for(tally_upstream(cache=CACHE)), clock) as client:
        assert text(await client.call_tool("tally__tally", {"label": "t"})) == "t #1"
        clock.now += 59.5
        assert text(await client.call_tool("tally__tally", {"label": "t"})) == "t #1"
        clock.now += 0.5
        assert text(await client.call_tool("tally__tally", {"label": "t"})) == "t #2"
        assert text(await client.call_tool("tally__tally", {"label": "t"})) == "t #2"


async def test_a_server_without_a_cache_section_is_reached_every_time() -> None:
    async with in_process(settings_for(tally_upstream()), FakeClock()) as client:
        answers = [text(await client.call_tool("tally__tally", {"label": "n"})) for _ in range(2)]
    assert answers == ["n #1", "n #2"]


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
async def test_a_call_that_asked_the_client_back_is_never_cached(upstream_era: str) -> None:
    upstream = callbacks_upstream(upstream_era).model_copy(
        update={"cache": ResultCacheConfig(ttl_secs=60, tools=("ask_user",))}
    )
    side = ClientSide()
    async with in_process(settings_for(upstream), FakeClock(), side) as client:
        for _ in range(2):
            result = await client.call_tool("cb__ask_user", {})
            assert text(result) == 'user accept: {"name": "Ada"}'
    assert len([asked for asked in side.asked if asked.startswith("form:")]) == 2


async def test_a_server_whose_tools_change_loses_its_cached_results() -> None:
    clock = FakeClock()
    upstream = stdio_fixture("alpha", cache=ResultCacheConfig(ttl_secs=60, tools=("echo",)))
    async with Gateway(settings_for(upstream), cache_clock=clock) as gateway:
        await gateway.wait_settled(30)
        kept = gateway.result_cache.cache
        await gateway.pipeline.call_tool("alpha__echo", {"text": "hi"})
        await gateway.pipeline.call_tool("alpha__echo", {"text": "hi"})
        assert (len(kept), kept.hits["alpha"]) == (1, 1)
        await gateway.pipeline.call_tool("alpha__grow", {"name": "fresh_tool"})
        await gateway.wait_until(lambda: gateway.catalog.get("alpha__fresh_tool") is not None, timeout_secs=DEADLINE)
        assert len(kept) == 0
