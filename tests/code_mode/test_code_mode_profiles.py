"""Code mode as a profile's exposure, over real HTTP: a script's calls keep to the profile's
slice, meet its policies exactly as the same client's calls outside a script, and are
audited as that client's calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.audit import AuditQuery
from mcp_aggregator.serve.error_mapping import POLICY_DENIED
from mcp_aggregator.settings import Settings
from tests.conftest import settings_for, stdio_fixture
from tests.http_serving import served_over_http

BOB = "bob-token-0123456789abcdef"
OPS = "ops-token-0123456789abcdef"
RULE = "read-only-unless-ops"
TOOLS = ["alpha.echo", "alpha.add"]
SCRIPT = """
out = {"echo": await call_tool("alpha.echo", {"text": "hi"})}
try:
    out["add"] = await call_tool("alpha.add", {"a": 1, "b": 2})
except PermissionError as e:
    out["add"] = "refused: " + str(e)
try:
    out["pid"] = await call_tool("alpha.pid", {})
except LookupError as e:
    out["pid"] = "unknown: " + str(e)
out
"""


def profile_settings() -> Settings:
    sections: dict[str, Any] = {
        "profiles": [
            {"name": "coders", "tools": TOOLS, "exposure": "code"},
            {"name": "plain", "tools": TOOLS, "exposure": "passthrough"},
        ],
        "clients": [
            {"name": "bob", "token": BOB, "profiles": ["coders", "plain"]},
            {"name": "ops", "token": OPS, "profiles": ["coders"]},
        ],
        "policies": [{"name": RULE, "deny": '!tool.annotations.readOnlyHint && client.name != "ops"'}],
    }
    return settings_for(stdio_fixture("alpha"), sections=sections)


@asynccontextmanager
async def client_of(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


def answer(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data


async def test_a_profile_in_code_mode_refuses_inside_a_script_what_it_refuses_outside() -> None:
    async with served_over_http(profile_settings()) as served:
        async with client_of(f"{served.mcp_url}/coders", BOB) as bob:
            listed = [tool.name for tool in (await bob.list_tools()).tools]
            inside = answer(await bob.call_tool("run_code", {"code": SCRIPT}))
        async with client_of(f"{served.mcp_url}/plain", BOB) as plain:
            with pytest.raises(MCPError) as denied:
                await plain.call_tool("alpha__add", {"a": 1, "b": 2})
            with pytest.raises(MCPError) as unknown:
                await plain.call_tool("alpha__pid", {})
        async with client_of(f"{served.mcp_url}/coders", OPS) as ops:
            allowed = answer(await ops.call_tool("run_code", {"code": SCRIPT}))
        audit = served.gateway.audit
        assert audit is not None
        with anyio.fail_after(30):
            await audit.flush()
        entries = (await audit.log.query(AuditQuery(profile="coders"))).items
    audited = sorted((e.client, e.tool, e.outcome.value) for e in entries)
    assert audited == [
        ("bob", "add", "denied"),
        ("bob", "echo", "ok"),
        ("bob", "pid", "denied"),
        ("ops", "add", "ok"),
        ("ops", "echo", "ok"),
        ("ops", "pid", "denied"),
    ], "a script's calls are audited as its client's, in its profile (alpha.pid: outside it)"
    assert listed == ["mcp__proxy__aggregator__query", "tools", "run_code"]
    assert denied.value.error.code == POLICY_DENIED
    result = inside["result"]
    assert result["echo"] == "hi"
    assert result["add"] == "refused: " + denied.value.error.message
    assert RULE in result["add"]
    assert result["pid"] == "unknown: Tool not found: alpha.pid"
    assert "not found" in unknown.value.error.message.lower()
    assert allowed["result"]["add"] == {"total": 3}, "the same script as ops: the policy lets ops through"
