"""``ApprovalStore``: held calls and their decisions, in the registry's database.

The database is where replicas meet: an admin's decision taken on one replica is a row
update, told on PostgreSQL to the replica holding the call (``approval_notice``), which then
reads it (``get``). ``decide`` changes a row only while it
is pending, in one statement, so two deciders racing (a client and an admin, two admins on
two replicas) cannot both win: the call runs once or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_notice import notify_decided
from mcp_aggregator.approvals.approval_table import approvals
from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry.replica_book import ReplicaSeen
from mcp_aggregator.registry.replica_table import replicas
from mcp_aggregator.registry.table_store import TableStore

_MAX_LISTED = 500


class ApprovalStore(TableStore):
    """``async with ApprovalStore(settings)`` opens an engine on the registry's database
    (whose migrations made the table); it opens once. Raises ``RegistryError`` when the
    database refuses a read or a write."""

    async def add(self, approval: Approval) -> None:
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(approvals), [_row(approval)])
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot store a held call: {exc}") from exc

    async def decide(self, approval: Approval) -> bool:
        """Store ``approval``'s decision if its row is still pending; whether it was."""
        statement = (
            update(approvals)
            .where(approvals.c.id == approval.id, approvals.c.status == ApprovalStatus.PENDING.value)
            .values(
                status=approval.status.value,
                decided_at=approval.decided_at,
                decided_by=approval.decided_by,
                via=approval.via.value if approval.via is not None else None,
                reason=approval.reason,
            )
        )
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(statement)
                if result.rowcount and self.notifies:
                    await notify_decided(conn, self._settings.pg_schema, approval.id)
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot store a decision on a held call: {exc}") from exc
        return bool(result.rowcount)

    @property
    def notifies(self) -> bool:
        """Whether a decision is told to the other replicas (PostgreSQL's ``NOTIFY``)."""
        return self.engine.dialect.name == "postgresql"

    async def get(self, approval_id: str) -> Approval | None:
        try:
            async with self.engine.connect() as conn:
                row = (await conn.execute(select(approvals).where(approvals.c.id == approval_id))).first()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot read a held call: {exc}") from exc
        return None if row is None else _approval(row._mapping)

    async def listed(
        self,
        *,
        status: ApprovalStatus | None = ApprovalStatus.PENDING,
        server: str | None = None,
        tool: str | None = None,
        client: str | None = None,
    ) -> list[Approval]:
        """Newest first, at most 500."""
        statement = select(approvals).order_by(approvals.c.created_at.desc()).limit(_MAX_LISTED)
        for column, value in (
            (approvals.c.status, status.value if status is not None else None),
            (approvals.c.server, server),
            (approvals.c.tool, tool),
            (approvals.c.client, client),
        ):
            if value is not None:
                statement = statement.where(column == value)
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot list the held calls: {exc}") from exc
        return [_approval(row._mapping) for row in rows]

    async def orphaned(
        self, seen_since: datetime, *, live: str, approval_id: str | None = None
    ) -> list[tuple[Approval, ReplicaSeen | None]]:
        """Pending rows whose replica was not seen since ``seen_since`` (or has no row in
        ``replicas``), each with its replica as last seen; ``live``, this replica, is never
        among them. At most 500, oldest first. One statement, so a replica that started and
        held a call meanwhile (its row is written before it holds anything) is never taken
        for lost."""
        statement = (
            select(approvals, replicas.c.home, replicas.c.started_at, replicas.c.last_seen)
            .select_from(approvals.outerjoin(replicas, replicas.c.id == approvals.c.replica))
            .where(
                approvals.c.status == ApprovalStatus.PENDING.value,
                approvals.c.replica != live,
                or_(replicas.c.last_seen.is_(None), replicas.c.last_seen < seen_since),
            )
            .order_by(approvals.c.created_at)
            .limit(_MAX_LISTED)
        )
        if approval_id is not None:
            statement = statement.where(approvals.c.id == approval_id)
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot read the held calls of lost replicas: {exc}") from exc
        found = []
        for row in rows:
            fields = row._mapping
            seen = None
            if fields["last_seen"] is not None:
                seen = ReplicaSeen(fields["replica"], fields["home"], fields["started_at"], fields["last_seen"])
            found.append((_approval(fields), seen))
        return found

    async def cancel_pending(self, replicas: Sequence[str] | None, at: datetime, reason: str) -> int:
        """Cancel the pending rows held by ``replicas`` (None: every replica's); how many."""
        statement = update(approvals).where(approvals.c.status == ApprovalStatus.PENDING.value)
        if replicas is not None:
            statement = statement.where(approvals.c.replica.in_(list(replicas)))
        statement = statement.values(
            status=ApprovalStatus.CANCELLED.value, decided_at=at, via=DecidedVia.GATEWAY.value, reason=reason
        )
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(statement)
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot cancel held calls: {exc}") from exc
        return int(result.rowcount or 0)


def _row(approval: Approval) -> dict[str, Any]:
    return {
        "id": approval.id,
        "rule": approval.rule,
        "client": approval.client,
        "profile": approval.profile,
        "server": approval.server,
        "tool": approval.tool,
        "arguments": approval.arguments,
        "digest": approval.digest,
        "status": approval.status.value,
        "ask": approval.ask,
        "replica": approval.replica,
        "created_at": approval.created_at,
        "expires_at": approval.expires_at,
        "decided_at": approval.decided_at,
        "decided_by": approval.decided_by,
        "via": approval.via.value if approval.via is not None else None,
        "reason": approval.reason,
    }


def _approval(row: Any) -> Approval:
    return Approval(
        id=row["id"],
        rule=row["rule"],
        client=row["client"],
        profile=row["profile"],
        server=row["server"],
        tool=row["tool"],
        arguments=row["arguments"],
        digest=row["digest"],
        status=ApprovalStatus(row["status"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        ask=row["ask"],
        replica=row["replica"],
        decided_at=row["decided_at"],
        decided_by=row["decided_by"],
        via=DecidedVia(row["via"]) if row["via"] is not None else None,
        reason=row["reason"],
    )
