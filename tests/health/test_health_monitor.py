"""``HealthMonitor`` over a real SQLite registry, driven by a fake clock."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.health import (
    HealthMonitor,
    HealthOutcome,
    HealthResult,
    HealthSettings,
    MonitoredServer,
    ServerEvent,
    ServerStatus,
)
from mcp_aggregator.health.health_monitor import PHASES, phase_of
from mcp_aggregator.registry import Registry, RegistrySettings, ServerRecord, ServerSpec, TransportType

from .fake_clock import FakeClock
from .health_endpoints import health_endpoints

START = datetime(2025, 1, 8, 10, 0, tzinfo=UTC)
OK = HealthResult(HealthOutcome.HEALTHY, 4.0)
FAIL = HealthResult(HealthOutcome.UNHEALTHY, None, "ping failed")


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[Registry]:
    settings = RegistrySettings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}")
    async with Registry(settings) as opened:
        yield opened


@pytest.fixture
async def clock() -> AsyncIterator[FakeClock]:
    async with FakeClock(START) as fake:
        yield fake


@dataclass
class Pings:
    """The injected session ping: answers from a script, and records every call."""

    script: list[HealthResult | Exception] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    async def __call__(self, server: MonitoredServer) -> HealthResult:
        self.calls.append(server.name)
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


@dataclass
class Callbacks:
    transitions: list[tuple[str, ServerStatus, ServerStatus]] = field(default_factory=list)
    reconnects: list[str] = field(default_factory=list)

    async def on_transition(self, server: MonitoredServer, old: ServerStatus, new: ServerStatus) -> None:
        self.transitions.append((server.name, old, new))

    async def schedule_reconnect(self, server: MonitoredServer) -> None:
        self.reconnects.append(server.name)


async def connected_server(registry: Registry, name: str = "git", url: str | None = None) -> ServerRecord:
    server = await registry.register_server(
        ServerSpec(name, TransportType.STDIO, {"command": name}, health_check_url=url)
    )
    await registry.apply_event(server.id, ServerEvent.CONNECT)
    return await registry.apply_event(server.id, ServerEvent.CONNECT_OK)


def monitor(
    registry: Registry, clock: FakeClock, pings: Pings, callbacks: Callbacks, **settings: float
) -> HealthMonitor:
    return HealthMonitor(
        HealthSettings(**settings),
        servers=registry.list_servers,
        store=registry,
        check=pings,
        clock=clock,
        on_transition=callbacks.on_transition,
        schedule_reconnect=callbacks.schedule_reconnect,
    )


async def run_ticks(health: HealthMonitor, clock: FakeClock, ticks: int) -> None:
    """Start the monitor, let ``ticks`` intervals pass, stop it."""
    async with anyio.create_task_group() as tg:
        await tg.start(health.run)
        await clock.advance(30.0 * ticks)
        tg.cancel_scope.cancel()


async def test_one_failed_check_keeps_the_server_connected_and_logs_a_warning(
    registry: Registry, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = await connected_server(registry)
    pings, callbacks = Pings([FAIL]), Callbacks()

    with caplog.at_level(logging.WARNING):
        await run_ticks(monitor(registry, clock, pings, callbacks), clock, 1)

    stored = await registry.get_server(server.id)
    assert (stored.status, stored.consecutive_failures, stored.last_error) == (
        ServerStatus.CONNECTED,
        1,
        "ping failed",
    )
    assert stored.last_health_check == START + (phase_of(server.id) + 1) * timedelta(seconds=30 / PHASES)
    assert "git failed its health check (1 in a row" in caplog.text
    assert callbacks.transitions == []


async def test_second_failed_check_moves_the_server_to_degraded(registry: Registry, clock: FakeClock) -> None:
    server = await connected_server(registry)
    pings, callbacks = Pings([FAIL, FAIL]), Callbacks()

    await run_ticks(monitor(registry, clock, pings, callbacks), clock, 2)

    stored = await registry.get_server(server.id)
    assert (stored.status, stored.consecutive_failures) == (ServerStatus.DEGRADED, 2)
    assert callbacks.transitions == [("git", ServerStatus.CONNECTED, ServerStatus.DEGRADED)]
    assert callbacks.reconnects == []


async def test_third_failed_check_moves_the_server_to_error_and_schedules_a_reconnection(
    registry: Registry, clock: FakeClock
) -> None:
    server = await connected_server(registry)
    pings, callbacks = Pings([FAIL, FAIL, FAIL]), Callbacks()

    await run_ticks(monitor(registry, clock, pings, callbacks), clock, 3)

    stored = await registry.get_server(server.id)
    assert (stored.status, stored.consecutive_failures) == (ServerStatus.ERROR, 3)
    assert callbacks.transitions == [
        ("git", ServerStatus.CONNECTED, ServerStatus.DEGRADED),
        ("git", ServerStatus.DEGRADED, ServerStatus.ERROR),
    ]
    assert callbacks.reconnects == ["git"]


async def test_a_success_restores_a_degraded_server_and_resets_its_failures(
    registry: Registry, clock: FakeClock
) -> None:
    server = await connected_server(registry)
    pings, callbacks = Pings([FAIL, FAIL, OK]), Callbacks()

    await run_ticks(monitor(registry, clock, pings, callbacks), clock, 3)

    stored = await registry.get_server(server.id)
    assert (stored.status, stored.consecutive_failures, stored.response_time_ms) == (
        ServerStatus.CONNECTED,
        0,
        4.0,
    )
    assert stored.last_error == "ping failed"
    assert callbacks.transitions[-1] == ("git", ServerStatus.DEGRADED, ServerStatus.CONNECTED)


async def test_only_connected_and_degraded_servers_are_checked(registry: Registry, clock: FakeClock) -> None:
    await connected_server(registry, "git")
    await registry.register_server(ServerSpec("idle", TransportType.STDIO, {"command": "idle"}))
    pings = Pings([OK])

    await run_ticks(monitor(registry, clock, pings, Callbacks()), clock, 1)

    assert pings.calls == ["git"]


async def test_a_server_with_a_health_url_is_checked_over_http_not_pinged(registry: Registry, clock: FakeClock) -> None:
    pings, callbacks = Pings(), Callbacks()
    async with health_endpoints() as base:
        ok = await connected_server(registry, "ok", f"{base}/ok")
        failing = await connected_server(registry, "failing", f"{base}/fail")
        missing = await connected_server(registry, "missing", f"{base}/missing")
        hanging = await connected_server(registry, "hanging", f"{base}/hang")

        await run_ticks(monitor(registry, clock, pings, callbacks, timeout_secs=0.2), clock, 1)

    assert pings.calls == []
    failures = {s.name: s.consecutive_failures for s in await registry.list_servers()}
    assert failures == {ok.name: 0, failing.name: 1, missing.name: 0, hanging.name: 1}
    assert (await registry.get_server(missing.id)).last_error == "health check answered HTTP 404"
    assert (await registry.get_server(ok.id)).response_time_ms is not None


async def test_a_ping_that_raises_counts_as_a_failure(registry: Registry, clock: FakeClock) -> None:
    server = await connected_server(registry)
    pings = Pings([ConnectionResetError("session gone")])

    await run_ticks(monitor(registry, clock, pings, Callbacks()), clock, 1)

    stored = await registry.get_server(server.id)
    assert (stored.consecutive_failures, stored.last_error) == (1, "ConnectionResetError: session gone")


async def test_a_ping_that_hangs_past_the_timeout_counts_as_a_failure(registry: Registry, clock: FakeClock) -> None:
    server = await connected_server(registry)
    never = anyio.Event()

    async def hanging_ping(server: MonitoredServer) -> HealthResult:
        await never.wait()
        return OK

    health = HealthMonitor(
        HealthSettings(timeout_secs=0.2),
        servers=registry.list_servers,
        store=registry,
        check=hanging_ping,
        clock=clock,
    )
    await run_ticks(health, clock, 1)

    stored = await registry.get_server(server.id)
    assert (stored.consecutive_failures, stored.last_error) == (1, "health check timed out after 0.2s")


async def test_a_result_is_dropped_when_the_server_changed_state_during_the_check(
    registry: Registry, clock: FakeClock
) -> None:
    server = await connected_server(registry)
    callbacks = Callbacks()

    async def ping_while_admin_disconnects(checked: MonitoredServer) -> HealthResult:
        await registry.apply_event(checked.id, ServerEvent.DISCONNECT)
        return FAIL

    health = HealthMonitor(
        HealthSettings(degraded_after=1, error_after=2),
        servers=registry.list_servers,
        store=registry,
        check=ping_while_admin_disconnects,
        clock=clock,
        on_transition=callbacks.on_transition,
    )
    await run_ticks(health, clock, 1)

    stored = await registry.get_server(server.id)
    assert (stored.status, stored.consecutive_failures) == (ServerStatus.DISCONNECTED, 0)
    assert callbacks.transitions == []


async def test_a_crashing_callback_is_logged_and_the_loop_goes_on(
    registry: Registry, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    await connected_server(registry)
    pings = Pings([FAIL, FAIL, FAIL])

    async def broken(server: MonitoredServer, old: ServerStatus, new: ServerStatus) -> None:
        raise RuntimeError("callback bug")

    health = HealthMonitor(
        HealthSettings(),
        servers=registry.list_servers,
        store=registry,
        check=pings,
        clock=clock,
        on_transition=broken,
    )
    with caplog.at_level(logging.ERROR):
        await run_ticks(health, clock, 3)

    assert pings.script == []
    assert "health check of server git crashed" in caplog.text


async def test_the_interval_is_configurable(registry: Registry, clock: FakeClock) -> None:
    health = monitor(registry, clock, Pings(), Callbacks(), interval_secs=5)

    async with anyio.create_task_group() as tg:
        await tg.start(health.run)
        assert await clock.advance(5) == pytest.approx([5 / PHASES] * PHASES, abs=1e-6)
        tg.cancel_scope.cancel()


async def test_the_checks_are_spread_over_the_interval_each_server_once_a_round(
    registry: Registry, clock: FakeClock
) -> None:
    servers = [await connected_server(registry, f"s{i:02}") for i in range(20)]
    checked: list[tuple[str, datetime]] = []

    async def ping(server: MonitoredServer) -> HealthResult:
        checked.append((server.id, clock.now()))
        return OK

    health = HealthMonitor(HealthSettings(), servers=registry.list_servers, store=registry, check=ping, clock=clock)
    async with anyio.create_task_group() as tg:
        await tg.start(health.run)
        await clock.advance(60)
        tg.cancel_scope.cancel()

    # Each server twice, once a round, at the end of its own one-second slot of the 30 s.
    slot = timedelta(seconds=30 / PHASES)
    expected = sorted(
        (server.id, START + rounds * timedelta(seconds=30) + (phase_of(server.id) + 1) * slot)
        for server in servers
        for rounds in (0, 1)
    )
    assert sorted(checked) == expected
    at_once = Counter(when for _, when in checked)
    assert len(at_once) > 10 and max(at_once.values()) < 20


def test_a_servers_slot_is_stable_and_the_slots_are_spread() -> None:
    ids = [f"server-{i}" for i in range(50)]
    assert [phase_of(i) for i in ids] == [phase_of(i) for i in ids]
    per_slot = Counter(phase_of(i) for i in ids)
    assert set(per_slot) <= set(range(PHASES))
    assert len(per_slot) >= PHASES // 2 and max(per_slot.values()) <= 5


async def test_a_monitor_runs_once(registry: Registry, clock: FakeClock) -> None:
    health = monitor(registry, clock, Pings(), Callbacks())
    async with anyio.create_task_group() as tg:
        await tg.start(health.run)
        with pytest.raises(RuntimeError, match="only be called once"):
            await health.run()
        tg.cancel_scope.cancel()


async def test_a_check_that_hangs_holds_back_no_other_servers_check(registry: Registry, clock: FakeClock) -> None:
    hung, other = await connected_server(registry, "hung"), await connected_server(registry, "other")
    release, both_checked = anyio.Event(), anyio.Event()
    checked: dict[str, datetime] = {}

    async def ping(server: MonitoredServer) -> HealthResult:
        checked[server.name] = clock.now()
        if len(checked) == 2:
            both_checked.set()
        if server.name == "hung":
            await release.wait()  # past every slot of the round: the timeout is an hour
        return OK

    health = HealthMonitor(
        HealthSettings(timeout_secs=3600), servers=registry.list_servers, store=registry, check=ping, clock=clock
    )
    async with anyio.create_task_group() as tg:
        await tg.start(health.run)
        for _ in range(PHASES):
            await clock.next_sleep()
            await clock.wake()
        with anyio.fail_after(10):
            await both_checked.wait()
        # Every slot of the round came while "hung" still hangs: "other" was checked in its own.
        slot = timedelta(seconds=30 / PHASES)
        assert checked == {
            "hung": START + (phase_of(hung.id) + 1) * slot,
            "other": START + (phase_of(other.id) + 1) * slot,
        }
        release.set()
        await clock.next_sleep()  # the round ended with the hung check
        tg.cancel_scope.cancel()
    for server in (hung, other):
        assert (await registry.get_server(server.id)).last_health_check == checked[server.name]
