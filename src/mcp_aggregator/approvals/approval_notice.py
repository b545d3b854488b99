"""Decisions on held calls told to the other replicas: PostgreSQL ``NOTIFY`` on a channel of
their own, followed through the registry's change feed.

The store queues ``{"id", "schema"}`` on ``mcp_aggregator_approvals`` in the transaction that
decides a row, so the notification exists exactly when the decision committed; the replica
holding that call reads the row at once instead of at its next slow poll.
"""

from __future__ import annotations

import json
from typing import Final

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

CHANNEL: Final = "mcp_aggregator_approvals"


async def notify_decided(conn: AsyncConnection, schema: str, approval_id: str) -> None:
    """Queue the notice in ``conn``'s transaction (PostgreSQL delivers it at commit)."""
    payload = json.dumps({"id": approval_id, "schema": schema}, separators=(",", ":"))
    await conn.execute(text("SELECT pg_notify(:channel, :payload)"), {"channel": CHANNEL, "payload": payload})


def decided_id(payload: str, schema: str) -> str | None:
    """The held call a notice names, when it is for ``schema``; else ``None`` (another
    registry on the same database, or a payload this version does not understand)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("schema") != schema or not isinstance(data.get("id"), str):
        return None
    return str(data["id"])
