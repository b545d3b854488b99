"""A gateway stopped right after it started leaves nothing running behind it.

Its background work (the audit writer's first purge among it) is mid-way through a database
call at that moment; cancelling such a call half-way through connecting leaves the driver's
clean-up as an orphan task that outlives the gateway (and, at the end of a test, the event loop).
"""

from __future__ import annotations

import asyncio

from mcp_aggregator.gateway import Gateway
from tests.conftest import settings_for


def _others() -> list[asyncio.Task[object]]:
    current = asyncio.current_task()
    return [task for task in asyncio.all_tasks() if task is not current and not task.done()]


async def test_a_gateway_stopped_at_once_leaves_no_task_behind() -> None:
    for _ in range(3):
        async with Gateway(settings_for()):
            pass
        assert _others() == []


async def test_a_gateway_without_an_audit_trail_stopped_at_once_leaves_no_task_behind() -> None:
    async with Gateway(settings_for(sections={"audit": {"enabled": False}})):
        pass
    assert _others() == []
