"""``write_tools``: the diff that makes a server's stored tools equal a listed set."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mcp_aggregator.registry.limits import Limits, check_tool_limits
from mcp_aggregator.registry.records import ToolRecord, ToolSpec
from mcp_aggregator.registry.tables import ExternalServerRow, ToolRow

logger = logging.getLogger(__name__)


async def write_tools(
    session: AsyncSession,
    server: ExternalServerRow,
    tools: Sequence[ToolSpec],
    limits: Limits,
    now: datetime,
) -> list[ToolRecord]:
    """Inside the caller's transaction, make ``server``'s tools exactly ``tools``.

    See ``Registry.replace_tools`` for the rules. Raises ``LimitExceededError`` before
    writing anything.
    """
    listed = {spec.original_name: spec for spec in tools}
    others = await session.scalar(
        select(func.count()).select_from(ToolRow).where(ToolRow.source_server_id != server.id)
    )
    check_tool_limits(limits, server.name, len(listed), others or 0)
    stored = {
        row.original_name: row
        for row in (await session.scalars(select(ToolRow).where(ToolRow.source_server_id == server.id))).all()
    }
    for name, row in stored.items():
        if name not in listed:
            await session.delete(row)
    rows = [_upsert(session, server, stored.get(name), spec, now) for name, spec in listed.items()]
    server.tool_count = len(listed)
    if not listed:
        logger.warning("server %s lists no tools; tool_count is 0", server.name)
    await session.flush()
    return sorted((row.to_record() for row in rows), key=lambda tool: tool.name)


def _upsert(
    session: AsyncSession, server: ExternalServerRow, row: ToolRow | None, spec: ToolSpec, now: datetime
) -> ToolRow:
    if row is None:
        row = ToolRow(
            id=str(uuid.uuid4()),
            name=f"{server.name}.{spec.original_name}",
            original_name=spec.original_name,
            description=spec.description,
            input_schema=dict(spec.input_schema),
            output_schema=spec.output_schema,
            annotations=spec.annotations,
            source_server_id=server.id,
            is_external=True,
            is_classified=False,
            skill_ids=[],
            primary_skill_id=None,
            discovered_at=now,
            updated_at=now,
        )
        session.add(row)
        return row
    if row.description != spec.description or row.input_schema != spec.input_schema:
        # What the classifier read has changed: its verdict no longer applies.
        row.is_classified = False
        row.skill_ids = []
        row.primary_skill_id = None
    if (row.description, row.input_schema, row.output_schema, row.annotations) != (
        spec.description,
        spec.input_schema,
        spec.output_schema,
        spec.annotations,
    ):
        row.description = spec.description
        row.input_schema = dict(spec.input_schema)
        row.output_schema = spec.output_schema
        row.annotations = spec.annotations
        row.updated_at = now
    return row
