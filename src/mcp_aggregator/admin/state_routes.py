"""``GET /api/v1/aggregator/state``: counts of servers by status and of tools."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from fastapi import APIRouter

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.schemas import IndexingPublic, StatePublic
from mcp_aggregator.admin.server_views import collect_samples
from mcp_aggregator.health.server_state import ServerStatus, is_exposed
from mcp_aggregator.registry import ToolTally


def aggregator_state(
    statuses: Sequence[ServerStatus],
    tools: ToolTally,
    exposed_tools: int,
    indexing: tuple[int, int] | None = None,
) -> StatePublic:
    """Pure: the state from the servers' live statuses, the registry's tool counts and the
    search index's embedding progress."""
    by_status = Counter(statuses)
    return StatePublic(
        total_servers=len(statuses),
        connected_servers=by_status[ServerStatus.CONNECTED],
        degraded_servers=by_status[ServerStatus.DEGRADED],
        connecting_servers=by_status[ServerStatus.CONNECTING],
        disconnected_servers=by_status[ServerStatus.DISCONNECTED],
        error_servers=by_status[ServerStatus.ERROR],
        total_tools=tools.total,
        exposed_tools=exposed_tools,
        classified_tools=tools.classified,
        unclassified_tools=max(0, tools.total - tools.classified),
        last_sync=tools.last_sync,
        indexing=None if indexing is None else IndexingPublic(embedded=indexing[0], total=indexing[1]),
    )


router = APIRouter(prefix="/api/v1/aggregator", tags=["state"])


@router.get("/state")
async def get_state(gateway: GatewayDep) -> StatePublic:
    """``connected_servers`` counts CONNECTED only; DEGRADED and CONNECTING are separate,
    so the five counts add up to ``total_servers``.

    ``total_tools`` adds up the servers' tool counts as the server list shows them (live where
    this process discovered them); ``classified_tools`` and ``last_sync`` are the registry's,
    which receives tools and classifications write-behind: in a large start they trail."""
    samples = await collect_samples(gateway)
    statuses = [sample.status for sample in samples]
    tally = await gateway.registry.tool_tally()
    total = 0
    for sample in samples:
        live = gateway.discovered_tool_count(sample.record.name)
        total += sample.record.tool_count if live is None else live
    tools = replace(tally, total=total)
    exposed = sum(
        len(sup.connection.tools)
        for sup in gateway.supervisors.values()
        if sup.connection is not None and is_exposed(sup.status)
    )
    return aggregator_state(statuses, tools, exposed, gateway.indexing_progress())
