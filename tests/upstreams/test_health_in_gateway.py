from __future__ import annotations

import os
import signal
from datetime import UTC, datetime

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.health.server_state import ServerStatus
from tests.conftest import HOST_PID, settings_for, stdio_fixture
from tests.health.fake_clock import FakeClock


async def test_a_stale_session_degrades_then_errors_and_is_replaced() -> None:
    """EC-010: a frozen upstream fails its pings; 2 -> DEGRADED, 3 -> ERROR, then a new session."""
    health = HealthSettings(interval_secs=30, timeout_secs=0.3, reconnect_backoff_base_secs=0)
    settings = settings_for(stdio_fixture("alpha", sandbox=HOST_PID)).model_copy(update={"health": health})
    async with FakeClock(datetime(2026, 1, 1, tzinfo=UTC)) as clock, Gateway(settings, health_clock=clock) as gateway:
        await gateway.wait_settled(30)
        sup = gateway.supervisors["alpha"]
        pid = int((await gateway.call_tool("alpha.pid")).content[0].text)  # type: ignore[union-attr]
        first_connection = sup.connection
        await clock.advance(30)  # a healthy round
        assert sup.status is ServerStatus.CONNECTED and sup.consecutive_failures == 0
        assert sup.last_health_check is not None and sup.response_time_ms is not None

        os.kill(pid, signal.SIGSTOP)  # the process is alive but answers nothing: a stale session
        try:
            await clock.advance(30)
            assert (sup.status, sup.consecutive_failures) == (ServerStatus.CONNECTED, 1)
            await clock.advance(30)
            assert (sup.status, sup.consecutive_failures) == (ServerStatus.DEGRADED, 2)
            await clock.advance(30)
            assert sup.last_error == "health check timed out after 0.3s"
        finally:
            os.kill(pid, signal.SIGCONT)
        await gateway.wait_until(
            lambda: sup.status is ServerStatus.CONNECTED and sup.connection not in (None, first_connection),
            timeout_secs=30,
        )
        new_pid = int((await gateway.call_tool("alpha.pid")).content[0].text)  # type: ignore[union-attr]
        assert new_pid != pid
        await gateway.flush()
        record = await gateway.registry.get_server_by_name("alpha")
        assert record.status == "CONNECTED"
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()
