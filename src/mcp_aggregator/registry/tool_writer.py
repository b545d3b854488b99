"""``write_tools``: the diff that makes a server's stored tools equal a listed set.

Written with Core statements (one ``executemany`` each for the inserts, the updates and one
``DELETE`` for the gone), not ORM objects: a start stores 10,000 tools, and building, flushing
and reading back a mapped object per tool kept the event loop (where SQLAlchemy's asyncio
layer runs all of it) busy for seconds, during which no request was answered.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session

from mcp_aggregator.registry.limits import Limits, check_tool_limits
from mcp_aggregator.registry.records import ToolRecord, ToolSpec
from mcp_aggregator.registry.tables import ExternalServerRow, ToolRow

logger = logging.getLogger(__name__)

TOOLS = cast(Table, ToolRow.__table__)
_SET = (
    "description",
    "input_schema",
    "output_schema",
    "annotations",
    "updated_at",
    "is_classified",
    "skill_ids",
    "primary_skill_id",
)


def write_tools(
    session: Session,
    server: ExternalServerRow,
    tools: Sequence[ToolSpec],
    limits: Limits,
    now: datetime,
) -> list[ToolRecord]:
    """Inside the caller's transaction, make ``server``'s tools exactly ``tools``.

    See ``Registry.replace_tools`` for the rules. Raises ``LimitExceededError`` before
    writing anything. Blocking: an async caller passes it to ``AsyncSession.run_sync``; the
    write-behind runs it whole in a worker thread on an SQLite file (``Registry``).
    """
    listed = {spec.original_name: spec for spec in tools}
    others = session.scalar(select(func.count()).select_from(TOOLS).where(TOOLS.c.source_server_id != server.id))
    check_tool_limits(limits, server.name, len(listed), others or 0)
    stored = {
        row["original_name"]: row
        for row in session.execute(select(TOOLS).where(TOOLS.c.source_server_id == server.id)).mappings()
    }
    gone = [row["id"] for name, row in stored.items() if name not in listed]
    if gone:
        session.execute(delete(TOOLS).where(TOOLS.c.id.in_(gone)))
    new, changed, kept = [], [], []
    for name, spec in listed.items():
        old = stored.get(name)
        if old is None:
            new.append(_new_row(server, spec, now))
            continue
        row = _updated_row(old, spec, now)
        if row is None:
            kept.append(dict(old))
        else:
            changed.append(row)
    if new:
        session.execute(insert(TOOLS), new)
    if changed:
        # The SET clause is the keys of the rows, but ``b_id``.
        session.execute(
            update(TOOLS).where(TOOLS.c.id == bindparam("b_id")),
            [{"b_id": row["id"], **{column: row[column] for column in _SET}} for row in changed],
        )
    server.tool_count = len(listed)
    if not listed:
        logger.warning("server %s lists no tools; tool_count is 0", server.name)
    session.flush()
    return sorted((_record(row) for row in (*new, *changed, *kept)), key=lambda tool: tool.name)


def _new_row(server: ExternalServerRow, spec: ToolSpec, now: datetime) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "name": f"{server.name}.{spec.original_name}",
        "original_name": spec.original_name,
        "description": spec.description,
        "input_schema": dict(spec.input_schema),
        "output_schema": spec.output_schema,
        "annotations": spec.annotations,
        "source_server_id": server.id,
        "is_external": True,
        "is_classified": False,
        "skill_ids": [],
        "primary_skill_id": None,
        "discovered_at": now,
        "updated_at": now,
    }


def _updated_row(old: Any, spec: ToolSpec, now: datetime) -> dict[str, Any] | None:
    """``old`` (a stored row's mapping) as ``spec`` makes it; None when nothing changes."""
    if (old["description"], old["input_schema"], old["output_schema"], old["annotations"]) == (
        spec.description,
        spec.input_schema,
        spec.output_schema,
        spec.annotations,
    ):
        return None
    row = dict(old)
    if old["description"] != spec.description or old["input_schema"] != spec.input_schema:
        # What the classifier read has changed: its verdict no longer applies.
        row.update(is_classified=False, skill_ids=[], primary_skill_id=None)
    row.update(
        description=spec.description,
        input_schema=dict(spec.input_schema),
        output_schema=spec.output_schema,
        annotations=spec.annotations,
        updated_at=now,
    )
    return row


def _record(row: dict[str, Any]) -> ToolRecord:
    return ToolRecord(
        id=row["id"],
        name=row["name"],
        original_name=row["original_name"],
        description=row["description"],
        input_schema=row["input_schema"],
        output_schema=row["output_schema"],
        annotations=row["annotations"],
        source_server_id=row["source_server_id"],
        is_external=row["is_external"],
        is_classified=row["is_classified"],
        skill_ids=list(row["skill_ids"]),
        primary_skill_id=row["primary_skill_id"],
        discovered_at=row["discovered_at"],
        updated_at=row["updated_at"],
    )
