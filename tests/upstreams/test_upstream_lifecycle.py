from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import pytest_asyncio
from mcp import Client

from mcp_aggregator.errors import (
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamConnectError,
    UpstreamTimeoutError,
)
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams import UpstreamConnection
from tests.conftest import HOST_PID, HttpUpstream, running_gateway, settings_for, stdio_fixture
from tests.held import held
from tests.processes import ended

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateway."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[tuple[Gateway, Client]]:
    """A gateway over ``alpha`` for the tests that only call it (tool errors do not count
    against a server, so none of them changes what another sees)."""
    async with held(running_gateway(settings_for(stdio_fixture("alpha")))) as pair:
        yield pair


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


async def test_all_three_transports_connect_and_route_calls(
    http_upstream: HttpUpstream, sse_upstream: HttpUpstream
) -> None:
    settings = settings_for(
        stdio_fixture("alpha"),
        ServerConfig(name="web", transport="http", base_url=http_upstream.mcp_url),  # type: ignore[arg-type]
        ServerConfig(name="events", transport="sse", url=sse_upstream.sse_url),  # type: ignore[arg-type]
    )
    async with running_gateway(settings) as (gateway, _client):
        assert {n: s.status for n, s in gateway.supervisors.items()} == dict.fromkeys(
            ["alpha", "web", "events"], ServerStatus.CONNECTED
        )
        for server in ("alpha", "web", "events"):
            result = await gateway.call_tool(f"{server}.echo", {"text": server})
            assert text_of(result) == server


async def test_one_session_per_upstream_is_reused_for_every_call(alpha: tuple[Gateway, Client]) -> None:
    gateway, _client = alpha
    pids = {text_of(await gateway.call_tool("alpha.pid")) for _ in range(5)}
    assert len(pids) == 1


async def test_a_failing_upstream_never_blocks_the_others() -> None:
    broken = ServerConfig(name="broken", transport="stdio", command="/nonexistent/mcp-server")  # type: ignore[arg-type]
    dead_http = ServerConfig(name="gone", transport="http", base_url="http://127.0.0.1:9/mcp")  # type: ignore[arg-type]
    settings = settings_for(broken, dead_http, stdio_fixture("alpha"))
    settings = settings.model_copy(update={"health": HealthSettings(reconnect_max_attempts=1)})
    async with running_gateway(settings) as (gateway, _client):
        assert gateway.supervisors["alpha"].status is ServerStatus.CONNECTED
        assert gateway.supervisors["broken"].status is ServerStatus.ERROR
        assert "broken:" in (gateway.supervisors["broken"].error_message or "")
        assert gateway.supervisors["gone"].status is ServerStatus.ERROR
        assert text_of(await gateway.call_tool("alpha.echo", {"text": "still here"})) == "still here"


async def test_unset_variable_fails_only_its_server_with_a_clear_error() -> None:
    needs_token = ServerConfig(
        name="needs-token",
        transport="http",
        base_url="http://127.0.0.1:9/mcp",  # type: ignore[arg-type]
        headers={"Authorization": "Bearer ${SURELY_UNSET_TOKEN_VAR}"},
    )
    async with running_gateway(settings_for(needs_token, stdio_fixture("alpha"))) as (gateway, _client):
        sup = gateway.supervisors["needs-token"]
        assert sup.status is ServerStatus.ERROR
        assert sup.error_message == (
            "server 'needs-token' headers.Authorization: environment variable ${SURELY_UNSET_TOKEN_VAR} is not set"
        )
        assert gateway.supervisors["alpha"].status is ServerStatus.CONNECTED


async def test_killed_stdio_upstream_fails_the_inflight_call_and_is_reaped() -> None:
    settings = settings_for(stdio_fixture("alpha", sandbox=HOST_PID), stdio_fixture("beta"))
    settings = settings.model_copy(update={"health": HealthSettings(reconnect_max_attempts=1)})
    async with running_gateway(settings) as (gateway, _client):
        pid = int(text_of(await gateway.call_tool("alpha.pid")))
        failure: list[BaseException] = []

        async def hanging_call() -> None:
            try:
                await gateway.call_tool("alpha.hang")
            except UpstreamClosedError as exc:
                failure.append(exc)

        connection = gateway.supervisors["alpha"].connection
        assert connection is not None
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hanging_call)
                await gateway.wait_until(lambda: connection.pending_requests > 0, timeout_secs=5)
                os.kill(pid, 9)
        assert failure and "alpha" in str(failure[0]) and "calling tool 'hang'" in str(failure[0])
        with anyio.fail_after(5):
            await ended(pid)
        await gateway.wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout_secs=5)
        assert text_of(await gateway.call_tool("beta.echo", {"text": "alive"})) == "alive"


async def test_upstream_crash_reconnects_with_a_new_process() -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha", sandbox=HOST_PID))) as (gateway, _client):
        first = text_of(await gateway.call_tool("alpha.pid"))
        sup = gateway.supervisors["alpha"]
        old = sup.connection
        with pytest.raises(UpstreamClosedError):
            await gateway.call_tool("alpha.crash")
        await gateway.wait_until(
            lambda: sup.status is ServerStatus.CONNECTED and sup.connection not in (None, old), timeout_secs=20
        )
        assert text_of(await gateway.call_tool("alpha.pid")) != first


async def test_progress_restarts_the_call_timeout() -> None:
    config = stdio_fixture("alpha")
    async with anyio.create_task_group() as tg:
        conn = UpstreamConnection(config)
        await tg.start(conn.run)
        seen: list[float] = []

        async def relay(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        result = await conn.call_tool("progress", {"steps": 5}, timeout_secs=30, progress=relay)
        assert text_of(result) == "done after 5 steps"
        assert seen == [1, 2, 3, 4, 5]
        with pytest.raises(UpstreamTimeoutError, match=r"alpha: timeout after 0\.2s while calling tool 'hang'"):
            await conn.call_tool("hang", timeout_secs=0.2)
        assert conn.pending_requests == 0
        await conn.close()


async def test_connect_failure_is_reported_before_readiness() -> None:
    config = ServerConfig(name="nope", transport="stdio", command=sys.executable, args=("-c", "pass"))  # type: ignore[arg-type]
    conn = UpstreamConnection(config)
    async with anyio.create_task_group() as tg:
        with pytest.raises(UpstreamConnectError, match=r"^nope: connection closed during the handshake"):
            await tg.start(conn.run)


async def test_tool_errors_pass_through_as_is_error_results(alpha: tuple[Gateway, Client]) -> None:
    gateway, client = alpha
    bad = await client.call_tool("alpha__add", {"a": "not a number", "b": 1})
    assert bad.is_error
    failed = await client.call_tool("alpha__fail", {"message": "kaput"})
    assert failed.is_error
    result = await gateway.call_tool("alpha.add", {"a": 1, "b": 2})
    assert result.structured_content == {"total": 3}


async def test_upstream_json_rpc_errors_keep_their_code(alpha: tuple[Gateway, Client]) -> None:
    gateway, _client = alpha
    connection = gateway.supervisors["alpha"].require_connection()
    with pytest.raises(UpstreamCallError) as info:
        await connection.request("read", lambda c: c.read_resource("fixture://nope"))
    assert info.value.code == -32602
    assert str(info.value) == "alpha: Unknown resource: fixture://nope"


async def test_gateway_start_does_not_wait_for_upstreams() -> None:
    async with Gateway(settings_for(stdio_fixture("alpha"))) as gateway:
        assert gateway.supervisors["alpha"].status in (ServerStatus.CONNECTING, ServerStatus.DISCONNECTED)
        await gateway.wait_settled(30)
        assert gateway.supervisors["alpha"].status is ServerStatus.CONNECTED
