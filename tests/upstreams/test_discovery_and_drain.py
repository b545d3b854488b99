from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import pytest_asyncio

from mcp_aggregator.errors import ServerUnavailableError, StateError, UpstreamClosedError, UpstreamTimeoutError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams.connection import UpstreamConnection
from tests.conftest import REPO, running_gateway, settings_for, stdio_fixture
from tests.held import held

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share its gateways."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[Gateway]:
    """A gateway over ``alpha`` for the tests that leave it connected with nothing in flight."""
    async with held(running_gateway(settings_for(stdio_fixture("alpha")))) as (gateway, _client):
        yield gateway


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha_timing_out() -> AsyncIterator[Gateway]:
    """The same with a 0.3 s tool timeout, for the tests whose calls run past it."""
    async with held(running_gateway(settings_for(stdio_fixture("alpha", tool_timeout_secs=0.3)))) as (gateway, _):
        yield gateway


def paged(count: int, page: int = 100) -> ServerConfig:
    return ServerConfig(
        name="paged",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.paged_server", "--tools", str(count), "--page", str(page)),
        cwd=str(REPO),
    )


async def test_discovery_follows_cursors_through_600_tools() -> None:
    async with running_gateway(settings_for(paged(600))) as (gateway, client):
        assert len(gateway.catalog.for_server("paged")) == 600
        names = [t.name for t in (await client.list_tools()).tools if t.name.startswith("paged__")]
        assert len(names) == 600 and names[0] == "paged__tool_0000" and names[-1] == "paged__tool_0599"
        result = await client.call_tool("paged__tool_0599", {"x": 7})
        assert result.content[0].text == "tool_0599:7"  # type: ignore[union-attr]
        await gateway.flush()
        record = await gateway.registry.get_server_by_name("paged")
        assert record.tool_count == 600


async def test_a_server_over_the_tool_limit_is_refused_visibly() -> None:
    settings = settings_for(paged(120), stdio_fixture("alpha"))
    limits = settings.registry.limits.model_copy(update={"max_tools_per_server": 100})
    settings = settings.model_copy(update={"registry": settings.registry.model_copy(update={"limits": limits})})
    async with running_gateway(settings) as (gateway, _client):
        assert "paged" in gateway.discovery_refusals
        assert "100" in gateway.discovery_refusals["paged"]
        assert gateway.catalog.for_server("paged") == []
        assert gateway.catalog.for_server("alpha")
        with pytest.raises(ServerUnavailableError, match="paged"):
            await gateway.call_tool("paged.tool_0001", {})


async def raw_hang(connection: UpstreamConnection, *, callback: bool = False) -> bytes:
    """``hang`` as the fast path sends it: a stamped raw request beside the SDK session,
    awaited (``call_raw``) or answered by callback (``submit_raw``, the stdio face's way)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "method": "tools/call"}
    message["params"] = {"name": "hang", "arguments": {}}
    headers = connection.stamp(message)
    if not callback:
        return await connection.call_raw(message, headers, what="calling tool 'hang'")
    settled: asyncio.Future[bytes | Exception] = asyncio.get_running_loop().create_future()
    call = connection.submit_raw(message, headers, what="calling tool 'hang'", settle=settled.set_result)
    assert call is not None, "a stdio upstream takes a callback call at once"
    try:
        outcome = await settled
    except asyncio.CancelledError:
        call.withdraw()
        raise
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


async def disconnect_during_a_hanging_call(
    gateway: Gateway, *, force: bool, raw: str = "sdk"
) -> tuple[int, list[Exception]]:
    """Start ``alpha.hang``, disconnect alpha once it is in flight; the call's error and the abort count."""
    connection = gateway.supervisors["alpha"].connection
    assert connection is not None
    errors: list[Exception] = []

    async def hang() -> None:
        try:
            if raw != "sdk":
                await raw_hang(connection, callback=raw == "callback")
            else:
                await gateway.call_tool("alpha.hang")
        except UpstreamClosedError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(hang)
        await gateway.wait_until(lambda: connection.pending_requests == 1, timeout_secs=10)
        with anyio.fail_after(10):
            aborted = await gateway.disconnect_server(gateway.ids["alpha"], force=force)
    return aborted, errors


@pytest.mark.parametrize("raw", ["sdk", "raw", "callback"])
async def test_disconnect_waits_for_running_calls_then_aborts_them(raw: str) -> None:
    settings = settings_for(stdio_fixture("alpha"), drain_timeout_secs=0.2)
    async with running_gateway(settings) as (gateway, _client):
        sup = gateway.supervisors["alpha"]
        aborted, errors = await disconnect_during_a_hanging_call(gateway, force=False, raw=raw)
        assert aborted == 1
        assert str(errors[0]) == "alpha: server disconnected after 0.2s drain timeout while calling tool 'hang'"
        assert sup.status is ServerStatus.DISCONNECTED
        assert gateway.catalog.for_server("alpha") == [], "tools leave exposure until reconnection"
        with pytest.raises(ServerUnavailableError, match=r"status DISCONNECTED"):
            await gateway.call_tool("alpha.echo", {"text": "x"})
        with pytest.raises(StateError):
            await gateway.disconnect_server(gateway.ids["alpha"])
        await gateway.connect_server(gateway.ids["alpha"])
        await gateway.wait_until(lambda: sup.status is ServerStatus.CONNECTED, timeout_secs=30)
        assert gateway.catalog.for_server("alpha")


@pytest.mark.parametrize("raw", ["sdk", "raw", "callback"])
async def test_forced_disconnect_cancels_running_calls_at_once(raw: str) -> None:
    async with running_gateway(settings_for(stdio_fixture("alpha"))) as (gateway, _client):
        aborted, errors = await disconnect_during_a_hanging_call(gateway, force=True, raw=raw)
        assert aborted == 1
        assert str(errors[0]) == "alpha: disconnect forced while calling tool 'hang'"


@pytest.mark.parametrize("callback", [False, True], ids=["awaited", "callback"])
async def test_a_raw_call_past_the_tool_timeout_fails_alone(alpha_timing_out: Gateway, callback: bool) -> None:
    gateway = alpha_timing_out
    connection = gateway.connection("alpha")
    with pytest.raises(UpstreamTimeoutError, match=r"alpha: timeout after 0.3s while calling tool 'hang'"):
        await raw_hang(connection, callback=callback)
    await gateway.wait_until(lambda: connection.pending_requests == 0, timeout_secs=10)
    result = await gateway.call_tool("alpha.echo", {"text": "after"})
    assert result.content[0].text == "after"  # type: ignore[union-attr]


@pytest.mark.parametrize("callback", [False, True], ids=["awaited", "callback"])
async def test_a_caller_cancelling_a_raw_call_gets_its_cancellation_not_an_error(
    alpha: Gateway, callback: bool
) -> None:
    connection = alpha.connection("alpha")
    assert connection.pending_requests == 0
    outcome: list[str] = []

    async def call() -> None:
        try:
            await raw_hang(connection, callback=callback)
        except BaseException as exc:
            outcome.append(type(exc).__name__)
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await alpha.wait_until(lambda: connection.pending_requests == 1, timeout_secs=10)
        tg.cancel_scope.cancel()
    assert outcome == ["CancelledError"]
    await alpha.wait_until(lambda: connection.pending_requests == 0, timeout_secs=10)


async def test_concurrent_calls_to_one_server_are_all_answered(alpha: Gateway) -> None:
    results: dict[int, str] = {}

    async def call(i: int) -> None:
        result = await alpha.call_tool("alpha.echo", {"text": f"n{i}"})
        results[i] = result.content[0].text  # type: ignore[union-attr]

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(call, i)
    assert results == {i: f"n{i}" for i in range(50)}
