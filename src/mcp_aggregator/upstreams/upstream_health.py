"""The health monitor over the live upstreams: pings their sessions, and writes what it
finds to the registry behind the calls (write-behind, through the registry mirror)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import anyio

from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.health_monitor import Clock, HealthMonitor
from mcp_aggregator.health.health_result import HealthOutcome, HealthResult
from mcp_aggregator.health.live_health_store import LiveHealthStore, LiveServer, ServerSnapshot
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry import Registry
from mcp_aggregator.upstreams.upstream_set import UpstreamSet

Submit = Callable[[str, Callable[[], Awaitable[object]], str], None]
"""The registry mirror's ``submit``: a named write about a server (its id), run behind the
calls in order."""


def upstream_health_monitor(
    settings: HealthSettings,
    upstreams: UpstreamSet,
    registry: Callable[[], Registry],
    submit: Submit,
    clock: Clock | None = None,
) -> HealthMonitor:
    """A monitor whose check is an MCP ping over each server's own session."""

    def live_servers() -> dict[str, tuple[str, LiveServer, str | None]]:
        ids = upstreams.ids
        return {
            ids[name]: (ids[name], sup, sup.config.health_check_url)
            for name, sup in upstreams.supervisors.items()
            if name in ids
        }

    def persist(
        server_id: str,
        expected: ServerStatus,
        status: ServerStatus,
        failures: int,
        checked_at: datetime,
        response_time_ms: float | None,
        last_error: str | None,
    ) -> None:
        submit(
            "health",
            lambda: registry().record_health(
                server_id,
                expected_status=expected,
                status=status,
                consecutive_failures=failures,
                checked_at=checked_at,
                response_time_ms=response_time_ms,
                last_error=last_error,
            ),
            server_id,
        )

    async def ping(server: ServerSnapshot) -> HealthResult:
        connection = upstreams.supervisor(server.name).require_connection()
        started = anyio.current_time()
        await connection.ping(settings.timeout_secs)
        elapsed_ms = (anyio.current_time() - started) * 1000
        return HealthResult(HealthOutcome.HEALTHY, elapsed_ms, None)

    store = LiveHealthStore(live_servers, persist)
    return HealthMonitor(settings, servers=store.snapshot, store=store, check=ping, clock=clock)  # type: ignore[arg-type]
