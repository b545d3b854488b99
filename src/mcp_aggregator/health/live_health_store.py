"""Connects the health monitor to live supervisors: they hold the truth, the registry mirrors it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mcp_aggregator.health.server_state import ServerEvent, ServerStatus


class LiveServer(Protocol):
    """What the bridge needs of a supervisor."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> ServerStatus: ...

    consecutive_failures: int
    last_health_check: datetime | None
    response_time_ms: float | None
    last_error: str | None

    def health_event(self, event: ServerEvent, error: str | None = None, *, persist: bool = True) -> None: ...


@dataclass(frozen=True)
class ServerSnapshot:
    id: str
    name: str
    health_check_url: str | None
    status: ServerStatus
    consecutive_failures: int


_EVENTS = {
    ServerStatus.DEGRADED: ServerEvent.HEALTH_DEGRADED,
    ServerStatus.ERROR: ServerEvent.HEALTH_ERROR,
    ServerStatus.CONNECTED: ServerEvent.HEALTH_OK,
}


class LiveHealthStore:
    """``HealthStore`` over live supervisors, mirroring each result into the registry."""

    def __init__(
        self,
        servers: Callable[[], Mapping[str, tuple[str, LiveServer, str | None]]],
        persist: Callable[[str, ServerStatus, ServerStatus, int, datetime, float | None, str | None], None],
    ) -> None:
        self._servers = servers
        self._persist = persist

    async def snapshot(self) -> Sequence[ServerSnapshot]:
        return [
            ServerSnapshot(server_id, live.name, url, live.status, live.consecutive_failures)
            for server_id, live, url in self._servers().values()
        ]

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
        entry = self._servers().get(server_id)
        if entry is None or entry[1].status is not expected_status:
            return None
        live = entry[1]
        live.consecutive_failures = consecutive_failures
        live.last_health_check = checked_at
        live.response_time_ms = response_time_ms
        if last_error is not None:
            live.last_error = last_error
        self._persist(
            server_id, expected_status, status, consecutive_failures, checked_at, response_time_ms, last_error
        )
        if status is not expected_status:
            live.health_event(_EVENTS[status], last_error, persist=False)
        return live


AsyncSnapshot = Callable[[], Awaitable[Sequence[ServerSnapshot]]]
