"""Profiles, named clients, overrides and CEL policies, end to end: real upstreams (the
fixture server and PyPI's ``mcp-server-time``), the gateway over real HTTP, and SDK clients
holding different tokens."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.serve.error_mapping import POLICY_DENIED
from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import Settings
from tests.conftest import pypi_server, settings_for, stdio_fixture
from tests.http_serving import ServedGateway, served_over_http

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
OPS = "ops-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
RULE = "read-only-unless-ops"


def identity_settings() -> Settings:
    sections: dict[str, Any] = {
        "profiles": [
            {
                "name": "timekeeper",
                "servers": ["clock"],
                "overrides": [
                    {
                        "tool": "clock.get_current_time",
                        "name": "tokyo_time",
                        "description": "The time in Tokyo.",
                        "hide": {"timezone": "Asia/Tokyo"},
                    }
                ],
            },
            {"name": "echoes", "tools": ["alpha.ec*", "alpha.add"]},
            {"name": "finder", "tools": ["alpha.echo", "alpha.add"], "exposure": "facades"},
        ],
        "clients": [
            {"name": "alice", "token": "${TEST_ALICE_TOKEN}", "profiles": ["timekeeper"]},
            {"name": "bob", "token_sha256": hashlib.sha256(BOB.encode()).hexdigest(), "profiles": ["echoes", "finder"]},
            {"name": "ops", "token": OPS, "profiles": ["default", "echoes"]},
        ],
        "policies": [{"name": RULE, "deny": '!tool.annotations.readOnlyHint && client.name != "ops"'}],
    }
    return settings_for(
        stdio_fixture("alpha"),
        pypi_server("clock", "mcp-server-time"),
        sections=sections,
        admin_token=ADMIN,
    )


@asynccontextmanager
async def served(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServedGateway]:
    monkeypatch.setenv("TEST_ALICE_TOKEN", ALICE)
    async with served_over_http(identity_settings(), admin_token=ADMIN) as gateway:
        yield gateway


@asynccontextmanager
async def client_of(url: str, token: str, *, mode: str = "auto") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None, mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


def fast_path_of(served: ServedGateway, path: str) -> FastPath:
    for route in served.app.routes:
        if getattr(route, "path", None) == path:
            endpoint = route.endpoint  # type: ignore[attr-defined]
            assert isinstance(endpoint.app, FastPath)
            return endpoint.app
    raise AssertionError(f"no route {path}")


async def names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


def payload(result: types.CallToolResult) -> Any:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


async def test_each_client_sees_and_calls_only_its_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served(monkeypatch) as gw:
        async with client_of(f"{gw.mcp_url}/timekeeper", ALICE) as alice:
            assert await names(alice) == ["mcp__proxy__aggregator__query", "tokyo_time", "clock__convert_time"]
            listed = (await alice.list_tools()).tools[1]
            assert listed.description == "The time in Tokyo."
            assert "timezone" not in (listed.input_schema.get("properties") or {})
            # The hidden argument reaches the upstream as configured, under the upstream's own name.
            answer = payload(await alice.call_tool("tokyo_time", {}))
            assert answer["timezone"] == "Asia/Tokyo"
            with pytest.raises(MCPError, match="not found"):
                await alice.call_tool("alpha__echo", {"text": "hi"})
        async with client_of(f"{gw.mcp_url}/echoes", BOB) as bob:
            # alpha.add is in the profile but the policy denies it to bob: it leaves his list.
            assert await names(bob) == ["mcp__proxy__aggregator__query", "alpha__echo"]
            assert (await bob.call_tool("alpha__echo", {"text": "hi"})).structured_content == {"result": "hi"}
            with pytest.raises(MCPError) as denied:
                await bob.call_tool("alpha__add", {"a": 1, "b": 2})
            assert denied.value.error.code == POLICY_DENIED
            assert RULE in denied.value.error.message
            assert denied.value.error.data == {"rule": RULE, "tool": "alpha.add"}
            with pytest.raises(MCPError, match="not found"):
                await bob.call_tool("alpha__pid", {})
        async with client_of(f"{gw.mcp_url}/echoes", OPS) as ops:
            assert await names(ops) == ["mcp__proxy__aggregator__query", "alpha__echo", "alpha__add"]
            result = await ops.call_tool("alpha__add", {"a": 1, "b": 2})
            assert result.structured_content == {"total": 3}
        async with client_of(gw.mcp_url, OPS) as ops:
            everything = await names(ops)
            assert {"alpha__pid", "clock__get_current_time", "clock__convert_time"} <= set(everything)
            assert "tokyo_time" not in everything


async def test_no_or_a_bad_token_is_401_and_a_profile_not_given_is_403(monkeypatch: pytest.MonkeyPatch) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with served(monkeypatch) as gw, httpx.AsyncClient(base_url=gw.base, timeout=30) as http:

        async def status(path: str, token: str | None) -> int:
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            return (await http.post(path, json=initialize, headers={**headers, **auth})).status_code

        assert await status("/mcp/timekeeper", None) == 401
        assert await status("/mcp/timekeeper", "wrong-token-0123456789") == 401
        assert await status("/mcp/timekeeper", BOB) == 403
        assert await status("/mcp", ALICE) == 403  # the whole catalogue only for clients given default
        assert await status("/mcp", BOB) == 403
        assert await status("/mcp/timekeeper", ALICE) == 200
        assert await status("/mcp", OPS) == 200
        # No such profile: the admin app owns every other path, and wants its own token.
        assert await status("/mcp/nosuch", OPS) == 401
        as_alice = {**headers, "Authorization": f"Bearer {ALICE}"}
        forbidden = await http.post("/mcp/echoes", json=initialize, headers=as_alice)
        assert forbidden.json()["error_description"] == "this client may not use the profile 'echoes'"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_fast_path_honours_the_profile_and_the_policy(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    async with served(monkeypatch) as gw, client_of(f"{gw.mcp_url}/echoes", BOB, mode=mode) as bob:
        fast = fast_path_of(gw, "/mcp/echoes")
        await bob.list_tools()  # a handshake-era session is known to the gateway from here on
        before = fast.forwarded
        assert (await bob.call_tool("alpha__echo", {"text": "quick"})).structured_content == {"result": "quick"}
        with pytest.raises(MCPError) as denied:
            await bob.call_tool("alpha__add", {"a": 1, "b": 2})
        assert denied.value.error.data == {"rule": RULE, "tool": "alpha.add"}
        assert fast.forwarded == before + 2  # both answered on the fast path, the denial included
        with pytest.raises(MCPError, match="not found"):
            await bob.call_tool("clock__get_current_time", {"timezone": "UTC"})
        assert fast.forwarded == before + 2  # a name outside the profile is the full pipeline's to refuse


async def test_an_override_with_a_hidden_argument_takes_the_full_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served(monkeypatch) as gw, client_of(f"{gw.mcp_url}/timekeeper", ALICE) as alice:
        fast = fast_path_of(gw, "/mcp/timekeeper")
        before = fast.forwarded
        answer = payload(await alice.call_tool("tokyo_time", {"timezone": "Europe/Paris"}))
        assert answer["timezone"] == "Asia/Tokyo"  # a client cannot override a hidden argument
        assert fast.forwarded == before


async def test_facades_search_and_the_aggregator_query_keep_to_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served(monkeypatch) as gw, client_of(f"{gw.mcp_url}/finder", BOB) as bob:
        assert set(await names(bob)) >= {"tools", "servers"}

        async def facade(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            block = (await bob.call_tool(name, arguments)).content[0]
            assert isinstance(block, types.TextContent)
            envelope: dict[str, Any] = json.loads(block.text)
            return envelope

        async def tools(arguments: dict[str, Any]) -> dict[str, Any]:
            return await facade("tools", arguments)

        listed = await tools({"cmd": "list"})
        # alpha.add is in the profile, but the policy never lets bob call it: not listed, not found.
        assert [item["name"] for item in listed["data"]["items"]] == ["alpha.echo"]
        found = await tools({"cmd": "search", "params": {"query": "echo add integers process id time"}})
        assert found["ok"] is True and found["data"]
        assert {hit["name"] for hit in found["data"]} == {"alpha.echo"}
        executed = await tools({"cmd": "execute", "params": {"name": "alpha.pid", "arguments": {}}})
        assert executed["ok"] is False and "not found" in executed["error"].lower()
        denied = await tools({"cmd": "execute", "params": {"name": "alpha.add", "arguments": {"a": 1, "b": 2}}})
        assert denied["ok"] is False and RULE in denied["error"]
        servers = await facade("servers", {"cmd": "list"})
        assert [s["name"] for s in servers["data"]] == ["alpha"]
        with pytest.raises(MCPError) as refused:
            await bob.call_tool("mcp__proxy__aggregator__query", {"query": "time", "servers": ["clock"]})
        assert "clock" in json.dumps(refused.value.error.model_dump(mode="json"))


async def test_the_admin_api_lists_profiles_and_clients_without_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served(monkeypatch) as gw, httpx.AsyncClient(base_url=gw.base, timeout=30) as http:
        auth = {"Authorization": f"Bearer {ADMIN}"}
        profiles = (await http.get("/api/v1/aggregator/profiles", headers=auth)).json()
        assert profiles[0] == {
            "name": "default",
            "servers": ["*"],
            "tools": [],
            "prompts": [],
            "resources": [],
            "exposure": "passthrough",
            "endpoint": "/mcp",
        }
        assert profiles[3] == {
            "name": "finder",
            "servers": [],
            "tools": ["alpha.echo", "alpha.add"],
            "prompts": [],
            "resources": [],
            "exposure": "facades",
            "endpoint": "/mcp/finder",
        }
        clients = await http.get("/api/v1/aggregator/clients", headers=auth)
        assert clients.json() == [
            {"name": "alice", "profiles": ["timekeeper"]},
            {"name": "bob", "profiles": ["echoes", "finder"]},
            {"name": "ops", "profiles": ["default", "echoes"]},
        ]
        assert OPS not in clients.text and ALICE not in clients.text
        assert (await http.get("/api/v1/aggregator/clients")).status_code == 401
