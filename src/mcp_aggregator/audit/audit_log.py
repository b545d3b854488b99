"""``AuditLog``: the audit trail's table in the registry's database (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.audit.audit_entry import AuditEntry, Outcome
from mcp_aggregator.audit.audit_table import audit_log
from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry.table_store import TableStore


@dataclass(frozen=True)
class AuditQuery:
    """Which entries to read: every given filter must match; newest first, ``limit`` of them,
    older than the entry ``before`` (an id) when paging on."""

    client: str | None = None
    profile: str | None = None
    tool: str | None = None
    server: str | None = None
    outcome: Outcome | None = None
    request_id: str | None = None
    """The HTTP request's id (``X-Request-Id``)."""
    since: datetime | None = None
    until: datetime | None = None
    """Entries before this time (exclusive)."""
    before: int | None = None
    limit: int = 100


@dataclass(frozen=True)
class AuditPage:
    """One page of entries, newest first; ``next_before`` pages on (None on the last page)."""

    items: tuple[AuditEntry, ...]
    next_before: int | None


class AuditLog(TableStore):
    """Reads and writes audit entries. ``async with AuditLog(settings)`` opens an engine on the
    registry's database (whose migrations made the table); it opens once.

    Raises ``RegistryError`` when the database refuses a read or a write.
    """

    async def insert(self, entries: Sequence[AuditEntry]) -> None:
        """Store ``entries`` in one transaction."""
        if not entries:
            return
        rows = [_row(entry) for entry in entries]
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(audit_log), rows)
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot write {len(rows)} audit entries: {exc}") from exc

    async def query(self, query: AuditQuery) -> AuditPage:
        """One page of the entries ``query`` selects, newest first."""
        statement = _filtered(select(audit_log), query).order_by(audit_log.c.id.desc()).limit(query.limit)
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(statement)).mappings().all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot read the audit trail: {exc}") from exc
        items = tuple(_entry(row) for row in rows)
        full = len(items) == query.limit and items
        return AuditPage(items, items[-1].id if full else None)

    async def most_called(self, profile: str, limit: int) -> list[str]:
        """The canonical ``server.tool`` names ``profile`` called successfully most often, at
        most ``limit``, the most called first (ties by name)."""
        c = audit_log.c
        count = func.count().label("calls")
        statement = (
            select(c.server, c.tool, count)
            .where(c.profile == profile, c.method == "tools/call", c.outcome == Outcome.OK.value)
            .group_by(c.server, c.tool)
            .order_by(count.desc(), c.server, c.tool)
            .limit(limit)
        )
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot count the audit trail's calls: {exc}") from exc
        return [f"{server}.{tool}" for server, tool, _ in rows]

    async def purge(self, older_than: datetime) -> int:
        """Remove the entries from before ``older_than``; how many went."""
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(delete(audit_log).where(audit_log.c.time < older_than))
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot purge the audit trail: {exc}") from exc
        return int(result.rowcount or 0)


def _filtered(statement: Select[Any], query: AuditQuery) -> Select[Any]:
    c = audit_log.c
    for column, value in (
        (c.client, query.client),
        (c.profile, query.profile),
        (c.tool, query.tool),
        (c.server, query.server),
        (c.outcome, query.outcome.value if query.outcome else None),
        (c.request_id, query.request_id),
    ):
        if value is not None:
            statement = statement.where(column == value)
    if query.since is not None:
        statement = statement.where(c.time >= query.since)
    if query.until is not None:
        statement = statement.where(c.time < query.until)
    if query.before is not None:
        statement = statement.where(c.id < query.before)
    return statement


def _row(entry: AuditEntry) -> dict[str, Any]:
    return {
        "time": entry.time,
        "client": entry.client,
        "profile": entry.profile,
        "method": entry.method,
        "server": entry.server,
        "tool": entry.tool,
        "outcome": entry.outcome.value,
        "duration_ms": entry.duration_ms,
        "arguments_digest": entry.arguments_digest,
        "arguments": entry.arguments,
        "error": entry.error,
        "request_id": entry.request_id,
        "jsonrpc_id": entry.jsonrpc_id,
        "guardrails": list(entry.guardrails) if entry.guardrails else None,
        "cached": entry.cached,
    }


def _entry(row: Any) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        time=row["time"],
        client=row["client"],
        profile=row["profile"],
        method=row["method"],
        server=row["server"],
        tool=row["tool"],
        outcome=Outcome(row["outcome"]),
        duration_ms=row["duration_ms"],
        arguments_digest=row["arguments_digest"],
        arguments=row["arguments"],
        error=row["error"],
        request_id=row["request_id"],
        jsonrpc_id=row["jsonrpc_id"],
        guardrails=tuple(row["guardrails"]) if row["guardrails"] else None,
        cached=bool(row["cached"]),
    )
