from __future__ import annotations

from tests.conftest import running_gateway, settings_for, stdio_fixture
from tests.upstreams.test_discovery_and_drain import paged

CORE = ["mcp__proxy__aggregator__query", "tools", "servers", "aggregator"]


async def test_a_small_catalogue_gets_one_facade_per_server() -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"), exposure="facades")) as (_gateway, client):
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == [*CORE, "alpha"]


async def test_a_large_catalogue_keeps_the_list_small_and_every_tool_reachable() -> None:
    settings = settings_for(paged(600), stdio_fixture("alpha"), exposure="facades")
    async with running_gateway(settings) as (_gateway, client):
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == CORE
        size = sum(len(t.model_dump_json(by_alias=True, exclude_none=True)) for t in listed)
        assert size < 8_000
        result = await client.call_tool(
            "tools", {"cmd": "execute", "params": {"name": "paged.tool_0421", "arguments": {"x": 3}}}
        )
        assert '"ok":true' in result.content[0].text  # type: ignore[union-attr]
        assert "tool_0421:3" in result.content[0].text  # type: ignore[union-attr]
