"""Two SDK MCP Apps servers whose tools both point at ``ui://clock/app.html``, behind one gateway."""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from mcp_aggregator.settings import ServerConfig, Settings
from tests.conftest import REPO, serving_gateway, settings_for
from tests.http_serving import served_over_http

APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
ROUTED = {"east": "ui://aggregator+east/clock/app.html", "west": "ui://aggregator+west/clock/app.html"}


def clock(name: str, **extra: Any) -> ServerConfig:
    return ServerConfig(
        name=name,
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.clock_app_server", "--name", name),
        cwd=str(REPO),
        **extra,
    )


def two_clocks(**serve: Any) -> Settings:
    """``west`` is held to the handshake era, so both upstream eras are crossed."""
    return settings_for(clock("east"), clock("west", protocol="legacy"), **serve)


async def html_of(client: Client, uri: str) -> str:
    read = await client.read_resource(uri)
    contents = read.contents[0]
    assert isinstance(contents, types.TextResourceContents)
    assert contents.mime_type == APP_MIME_TYPE and str(contents.uri) == uri
    return contents.text


def linked(result: types.CallToolResult) -> tuple[str, str]:
    text, link = result.content
    assert isinstance(text, types.TextContent) and isinstance(link, types.ResourceLink)
    return text.text, str(link.uri)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_servers_tool_opens_its_own_app_through_the_gateway(mode: str) -> None:
    async with (
        serving_gateway(two_clocks()) as (_, gateway_server),
        Client(gateway_server.server, mode=mode, cache=None, extensions=APPS) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for server, uri in ROUTED.items():
            assert tools[f"{server}__get_time"].meta == {"ui": {"resourceUri": uri}}
            assert await html_of(client, uri) == f"<html><body>{server} clock</body></html>"
            said, link = linked(await client.call_tool(f"{server}__get_time", {}))
            # The upstream was told the gateway takes apps, and its link reads its own app.
            assert (said, link) == (f"{server}: 12:00 (with its app)", uri)
        assert sorted(str(r.uri) for r in (await client.list_resources()).resources) == sorted(ROUTED.values())
        if mode == "auto":
            assert client.server_capabilities is not None
            assert client.server_capabilities.extensions == {EXTENSION_ID: {}}


@pytest.mark.parametrize("exposure", ["facades", "code"])
async def test_a_tool_found_through_the_facade_names_its_own_app(exposure: str) -> None:
    async with (
        serving_gateway(two_clocks(exposure=exposure)) as (_, gateway_server),
        Client(gateway_server.server, cache=None, extensions=APPS) as client,
    ):
        for server, uri in ROUTED.items():
            got = await client.call_tool(
                "tools", {"cmd": "get", "detail": "full", "params": {"name": f"{server}.get_time"}}
            )
            answer = json.loads(got.content[0].text)  # type: ignore[union-attr]
            assert answer["ok"] and answer["data"]["app"] == uri, answer
            assert await html_of(client, uri) == f"<html><body>{server} clock</body></html>"
            if exposure == "facades":
                executed = await client.call_tool(
                    "tools", {"cmd": "execute", "detail": "full", "params": {"name": f"{server}.get_time"}}
                )
                data = json.loads(executed.content[0].text)["data"]  # type: ignore[union-attr]
                assert data["content"][1]["uri"] == uri


async def test_an_app_tool_called_over_http_takes_the_full_pipeline_and_links_its_own_app() -> None:
    async with served_over_http(two_clocks()) as served:
        async with Client(served.mcp_url, cache=None, extensions=APPS) as client:
            for server, uri in ROUTED.items():
                assert linked(await client.call_tool(f"{server}__get_time", {}))[1] == uri
                assert await html_of(client, uri) == f"<html><body>{server} clock</body></html>"
        async with Client(served.mcp_url, cache=None) as text_only:
            # A 2026-07-28 upstream hears, per request, that this client takes no apps; the
            # handshake-era one was told once, for every client, that the gateway does.
            assert linked(await text_only.call_tool("east__get_time", {}))[0] == "east: 12:00 (as text)"
            assert linked(await text_only.call_tool("west__get_time", {}))[0] == "west: 12:00 (with its app)"
