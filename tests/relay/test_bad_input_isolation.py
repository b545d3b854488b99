"""One client's bad request never harms another's.

Found by fuzzing: a ``tools/call`` whose arguments hold a lone surrogate parses, then
fails to encode towards the upstream inside the shared session's writer, closing it for
every other client. Here well-behaved clients of both eras call the same upstream over
real HTTP for the whole run while a corpus of malformed requests is sent over both MCP
eras, raw HTTP bodies and the REST API: every good call must succeed, every bad one must
get a clear error naming what is wrong.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp import Client

from mcp_aggregator.gateway import Gateway
from tests.conftest import settings_for, stdio_fixture
from tests.http_serving import served_over_http

SURROGATES = ["\ud800", "\udfff", "a\udc00b", "\ud83d"]


def bad_arguments(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Arguments with a lone surrogate hidden at a random depth: in a value, a key, a list."""
    out: list[dict[str, Any]] = []
    for _ in range(n):
        bad = rng.choice(SURROGATES)
        value: Any = bad
        for _ in range(rng.randint(0, 4)):
            value = rng.choice([[value], {"k": value}, {bad: 1}, ["ok", value]])
        out.append({"text": value} if rng.random() < 0.7 else {"text": "fine", "extra": value})
    return out


RAW_BODIES = [
    b"{not json",
    b"[]",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "alpha__echo", "arguments": "x"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
    b'"params": {"name": "alpha__echo", "arguments": {"text": "\\ud800"}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 7}}',
    b"\xff\xfe\x00",
]


MODERN = "2026-07-28"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def envelope(version: str) -> dict[str, Any]:
    if version != MODERN:
        return {}
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "fuzzer", "version": "0"},
        }
    }


def decode(response: httpx.Response) -> dict[str, Any]:
    """A JSON-RPC reply from a JSON body or the last ``data:`` line of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


async def rpc(
    http: httpx.AsyncClient, version: str, extra: dict[str, str], rid: int, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, **envelope(version)}})
    headers = {**HEADERS, **extra, "mcp-protocol-version": version}
    if version == MODERN:
        headers["mcp-method"] = method
        if "name" in params:
            headers["mcp-name"] = str(params["name"])
    response = await http.post("/mcp", content=body, headers=headers)
    assert response.status_code < 500, response.text
    return decode(response)


async def legacy_session(http: httpx.AsyncClient) -> str:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fuzzer", "version": "0"},
    }
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    response = await http.post("/mcp", content=json.dumps(body), headers=HEADERS)
    session = response.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await http.post("/mcp", content=json.dumps(done), headers=headers)
    return session


ADMIN_TOKEN = "isolation-test-admin-token-0123"


@asynccontextmanager
async def http_gateway_with_admin() -> AsyncIterator[tuple[Gateway, str]]:
    async with served_over_http(settings_for(stdio_fixture("alpha")), admin_token=ADMIN_TOKEN) as served:
        yield served.gateway, served.base


async def test_malformed_requests_of_every_kind_leave_other_clients_calls_untouched() -> None:
    rng = random.Random(20261122)
    done = anyio.Event()
    good_calls: dict[str, int] = {"legacy": 0, "auto": 0}
    refusals: list[str] = []

    async with http_gateway_with_admin() as (gateway, base):
        server_id = gateway.ids["alpha"]

        async def well_behaved(mode: str) -> None:
            async with Client(f"{base}/mcp", mode=mode, cache=None) as client:
                i = 0
                while not done.is_set() or i < 5:
                    result = await client.call_tool("alpha__echo", {"text": f"{mode} {i}"})
                    assert not result.is_error
                    block = result.content[0]
                    assert isinstance(block, types.TextContent) and block.text == f"{mode} {i}"
                    good_calls[mode] += 1
                    i += 1

        async def attack() -> None:
            admin_auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            async with httpx.AsyncClient(base_url=base, timeout=30, headers=admin_auth) as http:
                session = await legacy_session(http)
                for i, arguments in enumerate(bad_arguments(rng, 30)):
                    for version, extra in (("2025-11-25", {"mcp-session-id": session}), (MODERN, {})):
                        reply = await rpc(
                            http, version, extra, i, "tools/call", {"name": "alpha__echo", "arguments": arguments}
                        )
                        error = reply.get("error")
                        assert error is not None, reply
                        # Either the transport's JSON parser refuses the text outright, or it
                        # parses and the gateway refuses it at the edge, naming the field.
                        if error["code"] == types.PARSE_ERROR:
                            assert "escape" in error["message"], error
                        else:
                            assert error["code"] == types.INVALID_PARAMS, error
                            assert "not valid Unicode text" in error["message"], error
                        refusals.append(error["message"])
                    body = json.dumps({"arguments": arguments})  # ensure_ascii: the surrogate travels escaped
                    response = await http.post(
                        f"/api/v1/aggregator/servers/{server_id}/tools/echo/call",
                        content=body,
                        headers={"content-type": "application/json"},
                    )
                    assert response.status_code == 422, response.text
                    assert "not valid Unicode text" in response.text
                for raw in RAW_BODIES:
                    for version, extra in (("2025-11-25", {"mcp-session-id": session}), (MODERN, {})):
                        response = await http.post(
                            "/mcp", content=raw, headers={**HEADERS, **extra, "mcp-protocol-version": version}
                        )
                        assert response.status_code < 500, (raw, version, response.status_code, response.text)
            done.set()

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                tg.start_soon(well_behaved, "legacy")
                tg.start_soon(well_behaved, "auto")
                tg.start_soon(attack)
        assert gateway.supervisors["alpha"].connection is not None  # the shared session survived
    assert len(refusals) == 60
    assert good_calls["legacy"] >= 5 and good_calls["auto"] >= 5
    assert any("arguments.text" in r for r in refusals)
