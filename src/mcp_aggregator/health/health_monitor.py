"""The health monitor loop (BR-006): a thin shell around ``apply_health_result``."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol

import anyio
import httpx
from anyio.abc import TaskStatus

from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.health_result import (
    HealthAction,
    HealthOutcome,
    HealthResult,
    HealthUpdate,
    apply_health_result,
)
from mcp_aggregator.health.http_health_check import http_health_check
from mcp_aggregator.health.server_state import ServerStatus

logger = logging.getLogger(__name__)

MONITORED = (ServerStatus.CONNECTED, ServerStatus.DEGRADED)

PHASES = 30
"""The slots an interval is cut into: each server is checked in its own slot, so a start of
50 servers does not check (and re-list 10,000 tools) in one burst every interval."""


def phase_of(server_id: str, phases: int = PHASES) -> int:
    """The server's slot in every interval: stable across rounds and restarts (a digest of
    its id, not ``hash``, which is salted per process)."""
    digest = hashlib.blake2b(server_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest) % phases


class MonitoredServer(Protocol):
    """What the monitor reads of a server (``registry.ServerRecord`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def health_check_url(self) -> str | None: ...
    @property
    def status(self) -> ServerStatus: ...
    @property
    def consecutive_failures(self) -> int: ...


class HealthStore(Protocol):
    """Where results are persisted (``registry.Registry`` fits)."""

    async def record_health(
        self,
        server_id: str,
        *,
        expected_status: ServerStatus,
        status: ServerStatus,
        consecutive_failures: int,
        checked_at: datetime,
        response_time_ms: float | None,
        last_error: str | None,
    ) -> object | None:
        """Persist one result (``last_error=None`` keeps the stored one); return ``None``
        when the server is gone or no longer in ``expected_status`` (a stale result)."""
        ...


class Clock(Protocol):
    def now(self) -> datetime: ...
    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time in UTC and ``anyio.sleep``."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


ServerCheck = Callable[[MonitoredServer], Awaitable[HealthResult]]
TransitionCallback = Callable[[MonitoredServer, ServerStatus, ServerStatus], Awaitable[None]]
ReconnectCallback = Callable[[MonitoredServer], Awaitable[None]]


async def _no_transition(server: MonitoredServer, old: ServerStatus, new: ServerStatus) -> None:
    return None


async def _no_reconnect(server: MonitoredServer) -> None:
    return None


class HealthMonitor:
    """Checks every CONNECTED or DEGRADED server once per ``interval_secs``.

    A server with a ``health_check_url`` gets ``http_health_check``; any other gets the
    injected ``check`` (the session ping). Each result is folded by
    ``apply_health_result`` and persisted through ``store.record_health`` as a
    compare-and-set on the status the check started from, so a server disconnected or
    deleted meanwhile is left alone. Then ``on_transition`` and ``schedule_reconnect``
    are awaited. The interval is cut into ``PHASES`` slots and each server is checked in
    its own (``phase_of`` its id), each check running on while the next slots come
    (a hung server holds back no other's): still once per interval, the first within one
    interval after start, but never all in one burst; ``checked_at`` is the slot's time.
    Start it with ``await tg.start(monitor.run)``; it runs until cancelled and refuses a
    second ``run``.
    """

    def __init__(
        self,
        settings: HealthSettings,
        *,
        servers: Callable[[], Awaitable[Sequence[MonitoredServer]]],
        store: HealthStore,
        check: ServerCheck,
        clock: Clock | None = None,
        on_transition: TransitionCallback = _no_transition,
        schedule_reconnect: ReconnectCallback = _no_reconnect,
    ) -> None:
        self._settings = settings
        self._servers = servers
        self._store = store
        self._check = check
        self._clock = clock if clock is not None else SystemClock()
        self._on_transition = on_transition
        self._schedule_reconnect = schedule_reconnect
        self._client: httpx.AsyncClient | None = None
        self._started = False

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loop forever: each interval, sleep to each slot's end, then check its servers."""
        if self._started:
            raise RuntimeError("HealthMonitor.run() can only be called once")
        self._started = True
        async with httpx.AsyncClient() as client:
            self._client = client
            try:
                task_status.started()
                while True:
                    await self._round()
            finally:
                self._client = None

    async def _round(self) -> None:
        slot = self._settings.interval_secs / PHASES
        started = self._clock.now()
        # A slot's checks run on while the next slots come due, so a server that hangs to the
        # timeout holds no other's check back; the round ends once all its checks have.
        async with anyio.create_task_group() as tg:
            for phase in range(PHASES):
                # To the slot's end from the round's start; bounded by one slot should the
                # wall clock step back.
                due = (phase + 1) * slot - (self._clock.now() - started).total_seconds()
                await self._clock.sleep(min(slot, max(0.0, due)))
                for server in await self._due(phase):
                    tg.start_soon(self._check_one, server)

    async def check_all(self) -> None:
        """Check every CONNECTED or DEGRADED server once, concurrently."""
        async with anyio.create_task_group() as tg:
            for server in await self._due(None):
                tg.start_soon(self._check_one, server)

    async def _due(self, phase: int | None) -> list[MonitoredServer]:
        """The monitored servers (with ``phase``, those whose slot it is)."""
        return [
            s for s in await self._servers() if s.status in MONITORED and (phase is None or phase_of(s.id) == phase)
        ]

    async def _check_one(self, server: MonitoredServer) -> None:
        # When the check began: the slot's time, however long the check takes.
        checked_at = self._clock.now()
        # Top-level guard: one server's failing check or callback must not stop the loop.
        try:
            result = await self._probe(server)
            await self._apply(server, result, checked_at)
        except Exception:
            logger.exception("health check of server %s crashed", server.name)

    async def _probe(self, server: MonitoredServer) -> HealthResult:
        timeout = self._settings.timeout_secs
        if server.health_check_url:
            return await http_health_check(server.health_check_url, timeout, client=self._client)
        with anyio.move_on_after(timeout):
            try:
                return await self._check(server)
            except Exception as exc:
                # The ping may fail in any way the upstream fails; all of them count.
                return HealthResult(HealthOutcome.UNHEALTHY, None, f"{type(exc).__name__}: {exc}")
        return HealthResult(HealthOutcome.UNHEALTHY, None, f"health check timed out after {timeout:g}s")

    async def _apply(self, server: MonitoredServer, result: HealthResult, checked_at: datetime) -> None:
        update = apply_health_result(
            server.status,
            server.consecutive_failures,
            result,
            degraded_after=self._settings.degraded_after,
            error_after=self._settings.error_after,
        )
        stored = await self._store.record_health(
            server.id,
            expected_status=server.status,
            status=update.status,
            consecutive_failures=update.consecutive_failures,
            checked_at=checked_at,
            response_time_ms=result.response_time_ms,
            last_error=result.error,
        )
        if stored is None:
            logger.info("server %s changed state during its health check; result dropped", server.name)
            return
        _log(server, result, update)
        if update.status is not server.status:
            await self._on_transition(server, server.status, update.status)
        if update.action is HealthAction.RECONNECT:
            await self._schedule_reconnect(server)


def _log(server: MonitoredServer, result: HealthResult, update: HealthUpdate) -> None:
    if result.outcome is HealthOutcome.IGNORED:
        logger.warning("server %s: %s (not counted)", server.name, result.error)
    elif update.action is HealthAction.WARN:
        logger.warning(
            "server %s failed its health check (%d in a row, status %s): %s",
            server.name,
            update.consecutive_failures,
            update.status.value,
            result.error,
        )
    elif update.action is HealthAction.RECONNECT:
        logger.error(
            "server %s failed %d health checks in a row; status ERROR, reconnection scheduled: %s",
            server.name,
            update.consecutive_failures,
            result.error,
        )
