from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from tests.conftest import settings_for, stdio_fixture


async def wait_for_tool(gateway: Gateway, canonical: str) -> None:
    await gateway.wait_until(lambda: gateway.catalog.get(canonical) is not None, timeout_secs=15)


@pytest.mark.parametrize("upstream_protocol", ["auto", "legacy"])
async def test_upstream_list_changed_rediscovers_and_tells_a_legacy_client(upstream_protocol: str) -> None:
    settings = settings_for(stdio_fixture("alpha", protocol=upstream_protocol))
    notified = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notified.set()

    async with Gateway(settings) as gateway:
        await gateway.wait_settled(30)
        expected_version = "2026-07-28" if upstream_protocol == "auto" else "2025-11-25"
        assert gateway.supervisors["alpha"].connection.protocol_version == expected_version  # type: ignore[union-attr]
        server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(server.run_notifier)
            async with Client(server.server, mode="legacy", cache=None, message_handler=on_message) as client:
                await client.list_tools()
                await client.call_tool("alpha__grow", {"name": "fresh_tool"})
                await wait_for_tool(gateway, "alpha.fresh_tool")
                with anyio.fail_after(10):
                    await notified.wait()
                names = {t.name for t in (await client.list_tools()).tools}
                assert "alpha__fresh_tool" in names
                result = await client.call_tool("alpha__fresh_tool", {"text": "hi"})
                assert result.content[0].text == "fresh_tool: hi"  # type: ignore[union-attr]
            tg.cancel_scope.cancel()


async def test_a_modern_client_listening_is_told_the_list_changed() -> None:
    async with Gateway(settings_for(stdio_fixture("alpha"))) as gateway:
        await gateway.wait_settled(30)
        server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(server.run_notifier)
            async with Client(server.server, cache=None) as client:
                assert client.protocol_version == "2026-07-28"
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("alpha__grow", {"name": "newer_tool"})
                    with anyio.fail_after(15):
                        await subscription.__anext__()
                await wait_for_tool(gateway, "alpha.newer_tool")
            tg.cancel_scope.cancel()


async def test_every_later_change_is_told_too_not_only_the_first() -> None:
    told = 0
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        nonlocal told, heard
        if isinstance(message, types.ToolListChangedNotification):
            told += 1
            heard.set()

    async with Gateway(settings_for(stdio_fixture("alpha"))) as gateway:
        await gateway.wait_settled(30)
        server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(server.run_notifier)
            async with Client(server.server, mode="legacy", cache=None, message_handler=on_message) as client:
                await client.list_tools()
                for name in ("first_tool", "second_tool"):
                    heard = anyio.Event()
                    await client.call_tool("alpha__grow", {"name": name})
                    await wait_for_tool(gateway, f"alpha.{name}")
                    with anyio.fail_after(10):
                        await heard.wait()
            tg.cancel_scope.cancel()
    assert told >= 2
