"""Answers never wait for the registry's write-behind: while a bulk write holds the registry's
writer (as storing a server's thousand tools does in a large start), the admin API's reads and
the MCP endpoint still answer, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.registry.tables import ExternalServerRow
from tests.admin.conftest import API, TEST_ADMIN_TOKEN, admin_settings, http_server
from tests.http_serving import served_over_http
from tests.registry.conftest import Database

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


async def hold_the_writer(gateway: Gateway, server_id: str, held: anyio.Event, release: anyio.Event) -> None:
    """A write-behind that keeps its transaction open until ``release``: the server's row locked
    (PostgreSQL) and the database's one write lock taken (SQLite's ``BEGIN IMMEDIATE``)."""
    async with gateway.registry.transaction() as session:
        row = await session.get(ExternalServerRow, server_id, with_for_update=True)
        assert row is not None
        row.description = "held by a bulk write"
        await session.flush()
        held.set()
        await release.wait()


async def mcp_initialize_and_list(http: httpx.AsyncClient) -> dict[str, Any]:
    opened = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert opened.status_code == 200, opened.text
    session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post("/mcp", json=initialized, headers=session)).status_code == 202
    listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
    assert listed.status_code == 200, listed.text
    return rpc_result(listed)


def rpc_result(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of an answer sent as JSON or as one server-sent event."""
    if answer.headers["content-type"].startswith("text/event-stream"):
        data = [line.removeprefix("data:") for line in answer.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1])
    else:
        message = answer.json()
    result: dict[str, Any] = message["result"]
    return result


async def test_reads_and_mcp_answer_while_a_bulk_write_holds_the_registry(
    database: Database, upstream_url: str
) -> None:
    settings = admin_settings(database, http_server("alpha", upstream_url))
    async with served_over_http(settings, admin_token=TEST_ADMIN_TOKEN) as served:
        gateway = served.gateway
        server_id = gateway.ids["alpha"]
        auth = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
        held, release, flushed = anyio.Event(), anyio.Event(), anyio.Event()
        async with (
            httpx.AsyncClient(base_url=served.base, headers=auth, timeout=30) as http,
            anyio.create_task_group() as tg,
        ):
            # Through the write-behind itself, as the start's tool writes go.
            gateway._mirror.submit("a bulk write", lambda: hold_the_writer(gateway, server_id, held, release))

            async def flush() -> None:
                await gateway.flush()
                flushed.set()

            with anyio.fail_after(30):
                await held.wait()
            tg.start_soon(flush)

            listed = await http.get(f"{API}/servers")
            assert listed.status_code == 200
            (alpha,) = listed.json()
            assert (alpha["name"], alpha["status"]) == ("alpha", "CONNECTED")
            assert alpha["tool_count"] == gateway.discovered_tool_count("alpha") > 0
            detail = await http.get(f"{API}/servers/{server_id}")
            assert detail.status_code == 200 and detail.json()["connected_at"] is not None
            state = await http.get(f"{API}/state")
            assert state.status_code == 200 and state.json()["connected_servers"] == 1
            assert (await http.get("/readyz")).status_code == 200
            assert (await http.get("/healthz")).json()["status"] == "ok"
            tools = await mcp_initialize_and_list(http)
            assert tools["tools"]

            # The write-behind was held all along: nothing queued behind it was written.
            assert not flushed.is_set()
            release.set()
            with anyio.fail_after(30):
                await flushed.wait()
        record = await gateway.registry.get_server(server_id)
        assert record.description == "held by a bulk write"
