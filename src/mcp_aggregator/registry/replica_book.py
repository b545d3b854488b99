"""``ReplicaBook``: the gateway replicas on a shared registry, as their heartbeats show them.

Each replica writes its own row (``beat``) every ``registry.heartbeat_secs``; one whose
``last_seen`` is older than ``registry.replica_lost_secs`` is taken for lost (killed, out of
memory, its machine gone), and what it held can never go on. A replica that stops cleanly
deletes its row (``remove``). The times are each replica's own clock: replicas' clocks must
agree to well within the lost bound, as the held calls' ``expires_at`` already assume.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry.replica_table import replicas
from mcp_aggregator.registry.table_store import TableStore


@dataclass(frozen=True, slots=True)
class ReplicaSeen:
    """One replica as its latest heartbeat left it."""

    id: str
    home: str | None
    """The base URL other replicas reach it at (``serve.replica_url``, else its bound address)."""
    started_at: datetime
    last_seen: datetime

    def lost(self, now: datetime, after: timedelta) -> bool:
        return self.last_seen < now - after

    @classmethod
    def of_row(cls, row: Any) -> ReplicaSeen:
        return cls(id=row["id"], home=row["home"], started_at=row["started_at"], last_seen=row["last_seen"])


class ReplicaBook(TableStore):
    """``async with ReplicaBook(settings)`` opens an engine on the registry's database (whose
    migrations made the table). Raises ``RegistryError`` when the database refuses."""

    async def beat(self, seen: ReplicaSeen) -> None:
        """Write ``seen``; its row is made again if it was removed (a replica taken for lost
        that still lives announces itself again: its held calls are settled all the same)."""
        refresh = update(replicas).where(replicas.c.id == seen.id).values(home=seen.home, last_seen=seen.last_seen)
        try:
            async with self.engine.begin() as conn:
                if not (await conn.execute(refresh)).rowcount:
                    values = {"id": seen.id, "home": seen.home, "started_at": seen.started_at}
                    await conn.execute(insert(replicas), [{**values, "last_seen": seen.last_seen}])
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot write this replica's heartbeat: {exc}") from exc

    async def remove(self, replica_id: str) -> bool:
        """Delete ``replica_id``'s row; whether there was one."""
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(delete(replicas).where(replicas.c.id == replica_id))
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot remove a replica's heartbeat: {exc}") from exc
        return bool(result.rowcount)

    async def prune(self, before: datetime) -> int:
        """Delete the rows of replicas last seen before ``before``; how many."""
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(delete(replicas).where(replicas.c.last_seen < before))
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot prune the replicas' heartbeats: {exc}") from exc
        return int(result.rowcount or 0)

    async def listed(self) -> list[ReplicaSeen]:
        """Every replica with a row, the most recently seen first."""
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(select(replicas).order_by(replicas.c.last_seen.desc()))).all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot list the replicas: {exc}") from exc
        return [ReplicaSeen.of_row(row._mapping) for row in rows]
