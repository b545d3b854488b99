"""A dead upstream is noticed where it fails, not at the next health check.

Health checks run once an hour here, so every recovery below is the supervisor's own doing.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_aggregator.errors import ServerUnavailableError, UpstreamError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import ServerConfig, Settings
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor
from tests.conftest import HOST_PID, REPO, HttpUpstream, pypi_server, running_gateway, settings_for, stdio_fixture
from tests.ports import free_port


def text_of(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


def quiet(*servers: ServerConfig, **health: Any) -> Settings:
    return settings_for(*servers, sections={"health": {"interval_secs": 3600, **health}})


def start_http_fixture(port: int, *, name: str = "web") -> HttpUpstream:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.upstream.fixture_server", "http", "--name", name, "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        process.wait()
        raise RuntimeError(f"fixture server did not start: {line!r}")
    return HttpUpstream(process, port)


@pytest.fixture
def http_on_port() -> Iterator[Callable[[int], HttpUpstream]]:
    started: list[HttpUpstream] = []

    def start(port: int) -> HttpUpstream:
        upstream = start_http_fixture(port)
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        upstream.stop()


async def new_session(gateway: Gateway, sup: ServerSupervisor, old: object, within: float) -> None:
    await gateway.wait_until(
        lambda: sup.status is ServerStatus.CONNECTED and sup.connection not in (None, old), timeout_secs=within
    )


async def test_a_killed_stdio_upstream_is_replaced_at_once_without_a_call() -> None:
    async with running_gateway(quiet(stdio_fixture("alpha", sandbox=HOST_PID), stdio_fixture("beta"))) as (
        gateway,
        _client,
    ):
        sup = gateway.supervisors["alpha"]
        seen = len(sup.history) - 1
        old, pid = sup.connection, int(text_of(await gateway.call_tool("alpha.pid")))
        os.kill(pid, signal.SIGKILL)
        await gateway.wait_until(lambda: sup.status is not ServerStatus.CONNECTED, timeout_secs=5)
        with pytest.raises(ServerUnavailableError, match="alpha"):
            await gateway.call_tool("alpha.echo", {"text": "meanwhile"})
        await new_session(gateway, sup, old, within=20)
        assert int(text_of(await gateway.call_tool("alpha.pid"))) != pid
        assert list(sup.history)[seen:] == [
            ServerStatus.CONNECTED,
            ServerStatus.ERROR,
            ServerStatus.CONNECTING,
            ServerStatus.CONNECTED,
        ]
        assert sup.last_error is not None and "server" in sup.last_error
        assert text_of(await gateway.call_tool("beta.echo", {"text": "untouched"})) == "untouched"


async def test_killed_mcp_server_time_comes_back_under_load() -> None:
    """The real PyPI server, killed by signal while calls keep coming through the client."""
    clock = pypi_server("clock", "mcp-server-time")
    async with running_gateway(quiet(clock, stdio_fixture("beta"))) as (gateway, client):
        sup = gateway.supervisors["clock"]
        old = sup.connection
        assert old is not None and old.pipe is not None
        pid = old.pipe.pid
        assert pid is not None
        failures: list[str] = []
        other_failures: list[str] = []
        stop = anyio.Event()

        async def load(tool: str, args: dict[str, Any], into: list[str]) -> None:
            while not stop.is_set():
                try:
                    result = await client.call_tool(tool, args)
                except MCPError as exc:
                    into.append(str(exc))
                    # Calls fail at once while it is away: the next one goes when it is back.
                    await gateway.wait_until(
                        lambda: stop.is_set() or sup.connection not in (None, old), timeout_secs=20
                    )
                    continue
                assert not result.is_error

        async with anyio.create_task_group() as tg:
            tg.start_soon(load, "clock__get_current_time", {"timezone": "UTC"}, failures)
            tg.start_soon(load, "beta__echo", {"text": "x"}, other_failures)
            os.kill(pid, signal.SIGKILL)
            await gateway.wait_until(lambda: sup.status is not ServerStatus.CONNECTED, timeout_secs=5)
            await new_session(gateway, sup, old, within=20)
            stop.set()
        assert failures, "calls made while the server was away failed"
        result = await client.call_tool("clock__get_current_time", {"timezone": "UTC"})
        assert not result.is_error
        assert other_failures == []


async def test_calls_failing_on_the_transport_degrade_then_error_the_server() -> None:
    async with running_gateway(quiet(stdio_fixture("alpha", tool_timeout_secs=0.2))) as (gateway, _client):
        sup = gateway.supervisors["alpha"]
        seen = len(sup.history) - 1
        old = sup.connection
        for expected in (1, 2):
            with pytest.raises(UpstreamError, match=r"timeout after 0\.2s"):
                await gateway.call_tool("alpha.hang")
            assert sup.consecutive_failures == expected
        assert sup.status is ServerStatus.DEGRADED
        assert sup.last_error == "alpha: timeout after 0.2s while calling tool 'hang'"
        assert text_of(await gateway.call_tool("alpha.echo", {"text": "fine"})) == "fine"
        assert (sup.status, sup.consecutive_failures) == (ServerStatus.CONNECTED, 0)
        for _ in range(3):
            with pytest.raises(UpstreamError):
                await gateway.call_tool("alpha.hang")
        await new_session(gateway, sup, old, within=20)
        assert list(sup.history)[seen:] == [
            ServerStatus.CONNECTED,
            ServerStatus.DEGRADED,
            ServerStatus.CONNECTED,
            ServerStatus.DEGRADED,
            ServerStatus.ERROR,
            ServerStatus.CONNECTING,
            ServerStatus.CONNECTED,
        ]


async def test_tool_errors_do_not_count_against_the_server() -> None:
    async with running_gateway(quiet(stdio_fixture("alpha"))) as (gateway, client):
        sup = gateway.supervisors["alpha"]
        for _ in range(4):
            assert (await client.call_tool("alpha__fail", {"message": "no"})).is_error
        assert (sup.status, sup.consecutive_failures) == (ServerStatus.CONNECTED, 0)


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_an_http_upstream_stopped_and_restarted_on_its_port_is_reconnected(
    protocol: str, http_on_port: Callable[[int], HttpUpstream], caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    upstream = http_on_port(port)
    web = ServerConfig(name="web", transport="http", base_url=upstream.mcp_url, protocol=protocol)  # type: ignore[arg-type]
    async with running_gateway(quiet(web, stdio_fixture("beta"))) as (gateway, client):
        sup = gateway.supervisors["web"]
        seen = len(sup.history) - 1
        old = sup.connection
        assert not (await client.call_tool("web__echo", {"text": "up"})).is_error
        upstream.process.send_signal(signal.SIGKILL)
        upstream.process.wait()
        # The first call after the stop meets a refused connection: the session is given up.
        with pytest.raises(MCPError, match="web"):
            await client.call_tool("web__echo", {"text": "down"})
        await gateway.wait_until(lambda: sup.status is not ServerStatus.CONNECTED, timeout_secs=5)
        assert sup.last_error is not None
        assert not (await client.call_tool("beta__echo", {"text": "other"})).is_error
        await anyio.to_thread.run_sync(http_on_port, port)
        await new_session(gateway, sup, old, within=10)
        assert text_of(await client.call_tool("web__echo", {"text": "back"})) == "back"
        passed = list(sup.history)[seen:]
        assert passed[:3] == [ServerStatus.CONNECTED, ServerStatus.ERROR, ServerStatus.CONNECTING]
        assert sup.history[-1] is ServerStatus.CONNECTED


async def test_an_http_upstream_down_past_every_attempt_is_still_watched(
    http_on_port: Callable[[int], HttpUpstream],
) -> None:
    port = free_port()
    web = ServerConfig(name="web", transport="http", base_url=f"http://127.0.0.1:{port}/mcp")  # type: ignore[arg-type]
    settings = quiet(web, reconnect_max_attempts=1)
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(30)
        sup = gateway.supervisors["web"]
        assert sup.status is ServerStatus.ERROR
        await anyio.to_thread.run_sync(http_on_port, port)
        await gateway.wait_until(lambda: sup.status is ServerStatus.CONNECTED, timeout_secs=10)
        assert text_of(await gateway.call_tool("web.echo", {"text": "late"})) == "late"
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()


async def test_the_stdio_pipe_says_why_its_server_is_gone(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "mcp_aggregator.upstreams.server_supervisor")
    async with running_gateway(quiet(stdio_fixture("alpha"))) as (gateway, _client):
        sup = gateway.supervisors["alpha"]
        old = sup.connection
        with pytest.raises(UpstreamError):
            await gateway.call_tool("alpha.crash")
        await new_session(gateway, sup, old, within=20)
    assert any("upstream alpha" in r.getMessage() and "lost" in r.getMessage() for r in caplog.records)


async def test_a_handshake_session_its_restarted_upstream_no_longer_knows_is_replaced_at_once(
    http_on_port: Callable[[int], HttpUpstream],
) -> None:
    """Stopped and started again between two calls: the next call meets "Session terminated"."""
    port = free_port()
    upstream = http_on_port(port)
    web = ServerConfig(name="web", transport="http", base_url=upstream.mcp_url, protocol="legacy")  # type: ignore[arg-type]
    async with running_gateway(quiet(web)) as (gateway, client):
        sup = gateway.supervisors["web"]
        old = sup.connection
        assert text_of(await client.call_tool("web__echo", {"text": "before"})) == "before"
        upstream.process.send_signal(signal.SIGKILL)
        upstream.process.wait()
        await anyio.to_thread.run_sync(http_on_port, port)
        if sup.connection is old:
            with pytest.raises(MCPError, match="web"):
                await client.call_tool("web__echo", {"text": "stale session"})
        await new_session(gateway, sup, old, within=10)
        assert text_of(await client.call_tool("web__echo", {"text": "after"})) == "after"
