"""A call to a tool outside the caller's profile: the client hears "not found", exactly as for a
name that exists nowhere, and the audit records the attempt as ``denied`` with the name tried
and the profile, whichever exposure the profile serves (passthrough, facades, code)."""

from __future__ import annotations

import json
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
from mcp.shared.exceptions import MCPError

from mcp_aggregator.settings import Settings
from tests.conftest import settings_for, stdio_fixture
from tests.http_serving import served_over_http

BOB = "bob-token-0123456789abcdef"
OPS = "ops-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
SCRIPT = """
out = {}
for name in ("beta.add", "beta.nosuch"):
    try:
        await call_tool(name, {"a": 1, "b": 2})
    except LookupError as e:
        out[name] = str(e)
out
"""


def outside_settings() -> Settings:
    sections: dict[str, Any] = {
        "profiles": [
            {"name": "plain", "tools": ["alpha.echo"], "exposure": "passthrough"},
            {"name": "finder", "tools": ["alpha.echo"], "exposure": "facades"},
            {"name": "coders", "tools": ["alpha.echo"], "exposure": "code"},
            {"name": "wide", "servers": ["alpha", "beta"]},
        ],
        "clients": [
            {"name": "bob", "token": BOB, "profiles": ["plain", "finder", "coders"]},
            {"name": "ops", "token": OPS, "profiles": ["wide"]},
        ],
    }
    return settings_for(stdio_fixture("alpha"), stdio_fixture("beta"), sections=sections, admin_token=ADMIN)


@asynccontextmanager
async def client_of(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


def text_of(result: types.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


async def refusal(client: Client, name: str) -> tuple[int, str]:
    with pytest.raises(MCPError) as refused:
        await client.call_tool(name, {"a": 1, "b": 2})
    return refused.value.error.code, refused.value.error.message.replace(name, "NAME")


async def test_a_call_outside_the_profile_is_not_found_for_the_client_and_denied_in_the_audit() -> None:
    async with served_over_http(outside_settings(), admin_token=ADMIN) as served:
        async with client_of(f"{served.mcp_url}/plain", BOB) as plain:
            assert (await plain.call_tool("alpha__echo", {"text": "hi"})).structured_content == {"result": "hi"}
            outside = await refusal(plain, "beta__add")
            nowhere = await refusal(plain, "beta__nosuch")
        async with client_of(f"{served.mcp_url}/finder", BOB) as finder:
            facade = [
                text_of(await finder.call_tool("tools", {"cmd": "execute", "params": {"name": name, "arguments": {}}}))
                for name in ("beta.add", "beta.nosuch")
            ]
        async with client_of(f"{served.mcp_url}/coders", BOB) as coders:
            scripted = text_of(await coders.call_tool("run_code", {"code": SCRIPT}))["result"]
        async with client_of(f"{served.mcp_url}/wide", OPS) as ops:
            assert (await ops.call_tool("beta__add", {"a": 1, "b": 2})).structured_content == {"total": 3}
        audit = served.gateway.audit
        assert audit is not None
        with anyio.fail_after(30):
            await audit.flush()
        async with httpx.AsyncClient(base_url=served.base, timeout=30) as http:
            answer = await http.get(
                "/api/v1/aggregator/audit", params={"client": "bob"}, headers={"Authorization": f"Bearer {ADMIN}"}
            )
    assert answer.status_code == 200, answer.text
    trail = sorted(
        (item["profile"], item["server"], item["tool"], item["outcome"], item.get("error", ""))
        for item in answer.json()["items"]
    )
    assert trail == [
        ("coders", "beta", "add", "denied", "OutsideProfileError: beta.add is outside profile 'coders'"),
        ("finder", "beta", "add", "denied", "OutsideProfileError: beta.add is outside profile 'finder'"),
        ("plain", "alpha", "echo", "ok", ""),
        ("plain", "beta", "add", "denied", "OutsideProfileError: beta.add is outside profile 'plain'"),
    ], "each attempt past the slice is recorded once; a name that exists nowhere is not an attempt on a tool"
    assert outside == nowhere, "the client cannot tell a tool outside its profile from no tool at all"
    assert outside[1] == "Tool not found: NAME"
    assert [f["ok"] for f in facade] == [False, False]
    assert facade[0]["error"].replace("beta.add", "NAME") == facade[1]["error"].replace("beta.nosuch", "NAME")
    assert scripted == {"beta.add": "Tool not found: beta.add", "beta.nosuch": "Tool not found: beta.nosuch"}
