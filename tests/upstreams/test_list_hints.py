"""A 2026-07-28 upstream's lists are asked for again only once stale by their SEP-2549 hints
(``ttlMs``), and at once when it announces a change; without hints, every check asks."""

from __future__ import annotations

import sys

import mcp_types as types

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.settings import ServerConfig, Transport
from tests.conftest import REPO, settings_for

SETTLE = 30.0


def hinted(ttl_ms: int) -> ServerConfig:
    return ServerConfig(
        name="hinted",
        transport=Transport.STDIO,
        command=sys.executable,
        args=("-m", "tests.upstream.hinted_lists_server"),
        cwd=str(REPO),
        env={"HINT_TTL_MS": str(ttl_ms)},
    )


async def lists_asked(gateway: Gateway) -> int:
    result = await gateway.call_tool("hinted__lists_asked")
    assert isinstance(result.content[0], types.TextContent)
    return int(result.content[0].text)


async def test_a_fresh_list_is_not_asked_for_again_until_the_upstream_announces_a_change() -> None:
    async with Gateway(settings_for(hinted(3_600_000))) as gateway:
        await gateway.wait_settled(SETTLE)
        connection = gateway.upstreams.connection("hinted")
        assert connection.modern
        first = await lists_asked(gateway)
        assert not await connection.relist()  # the health check: the list is fresh for an hour
        assert not await connection.relist()
        assert await lists_asked(gateway) == first

        await gateway.call_tool("hinted__add_extra")
        await gateway.wait_until(lambda: gateway.catalog.get("hinted.extra") is not None, timeout_secs=SETTLE)
        assert await lists_asked(gateway) == first + 1  # the announcement evicted it at once


async def test_a_list_without_a_ttl_is_asked_for_at_every_check() -> None:
    async with Gateway(settings_for(hinted(0))) as gateway:
        await gateway.wait_settled(SETTLE)
        connection = gateway.upstreams.connection("hinted")
        first = await lists_asked(gateway)
        await connection.relist()
        await connection.relist()
        assert await lists_asked(gateway) == first + 2
