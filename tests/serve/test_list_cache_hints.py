"""SEP-2549: the lists the gateway serves 2026-07-28 clients say how long they may be kept."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from pydantic import ValidationError

from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import Settings
from tests.conftest import serving_gateway, settings_for, stdio_fixture


async def test_a_modern_client_gets_ttl_and_public_scope_on_every_list_and_a_legacy_one_gets_none() -> None:
    async with serving_gateway(settings_for(stdio_fixture("alpha"), list_ttl_secs=45)) as (_, server):
        async with Client(server.server, mode="auto", cache=None) as client:
            for listed in (
                await client.list_tools(),
                await client.list_prompts(),
                await client.list_resources(),
                await client.list_resource_templates(),
            ):
                assert (listed.ttl_ms, listed.cache_scope) == (45_000, "public"), type(listed).__name__
        async with Client(server.server, mode="legacy", cache=None) as client:
            listed = await client.list_tools()
            # What the SDK's model reads when the fields are absent (2025-11-25 has none).
            assert (listed.ttl_ms, listed.cache_scope) == (0, "private")
            assert "ttl_ms" not in listed.model_fields_set


async def test_a_profiles_lists_are_private() -> None:
    async with serving_gateway(settings_for(stdio_fixture("alpha"))) as (gateway, _):
        profile = GatewayServer(gateway, build_surface(gateway), profile="research")
        async with anyio.create_task_group() as tg:
            await tg.start(profile.run)
            async with Client(profile.server, mode="auto", cache=None) as client:
                listed = await client.list_tools()
                assert (listed.ttl_ms, listed.cache_scope) == (60_000, "private")
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("value", [-1, "soon", 86_401])
def test_a_bad_list_ttl_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(ValidationError, match=r"serve\.list_ttl_secs"):
        Settings.model_validate({"serve": {"list_ttl_secs": value}})
