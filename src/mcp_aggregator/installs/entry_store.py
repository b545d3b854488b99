"""``EntryStore``: the copy of each MCP Registry kept in the gateway's database (migrations 0007, 0012).

One row per (registry, entry name, version), with the registry's status and times and the
whole item as fetched, so search and the page work while a registry does not answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Boolean, String, Text, UniqueConstraint, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from mcp_aggregator.installs.registry_sync import SyncState, after_failure, after_listing, read_sync, write_sync
from mcp_aggregator.installs.server_json import RegistryItem
from mcp_aggregator.registry import Registry
from mcp_aggregator.registry.tables import SCHEMA, Base, Json

SEARCH_LIMIT = 100


class RegistryEntryRow(Base):
    __tablename__ = "mcp_registry_entries"
    __table_args__ = (
        UniqueConstraint("source", "name", "version", name="uq_mcp_registry_entries_source_name_version"),
        {"schema": SCHEMA},
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String(255))
    """The ``registries:`` name the entry was fetched from."""
    name: Mapped[str] = mapped_column(String(255))
    version: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    is_latest: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime | None]
    fetched_at: Mapped[datetime]
    item: Mapped[dict[str, Any]] = mapped_column(Json)


@dataclass(frozen=True)
class StoredEntry:
    registry: str
    item: RegistryItem
    fetched_at: datetime


class EntryStore:
    """Reads and writes the stored copies; every method is one transaction."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    async def save(self, registry: str, items: list[RegistryItem], *, now: datetime | None = None) -> None:
        """Insert or replace each item; an item marked latest makes its other versions not latest.

        The registry's ``SyncState`` is left as it is: items that were not listed (an
        install's look-up) say nothing about what the copy lacks.
        """
        async with self._registry.transaction() as session:
            await _save(session, registry, items, now or datetime.now(UTC))

    async def save_listing(self, registry: str, items: list[RegistryItem], *, now: datetime) -> SyncState:
        """Store what a listing that succeeded at ``now`` returned, and move the registry's
        ``SyncState`` past it, in one transaction; the new state."""
        async with self._registry.transaction() as session:
            await _save(session, registry, items, now)
            state = after_listing(await read_sync(session, registry), now, [i.official.updated_at for i in items])
            await write_sync(session, registry, state)
        return state

    async def record_failure(self, registry: str, *, now: datetime, error: str) -> SyncState:
        async with self._registry.transaction() as session:
            state = after_failure(await read_sync(session, registry), now, error)
            await write_sync(session, registry, state)
        return state

    async def sync_state(self, registry: str) -> SyncState:
        async with self._registry.transaction() as session:
            return await read_sync(session, registry)

    async def search(self, text: str, registries: list[str], *, limit: int = SEARCH_LIMIT) -> list[StoredEntry]:
        """Latest versions whose name or description holds ``text`` (any case), by name."""
        query = select(RegistryEntryRow).where(
            RegistryEntryRow.is_latest.is_(True), RegistryEntryRow.source.in_(registries)
        )
        needle = text.strip().lower()
        if needle:
            pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            query = query.where(
                or_(
                    func.lower(RegistryEntryRow.name).like(pattern, escape="\\"),
                    func.lower(func.coalesce(RegistryEntryRow.description, "")).like(pattern, escape="\\"),
                )
            )
        query = query.order_by(RegistryEntryRow.name, RegistryEntryRow.source).limit(limit)
        async with self._registry.transaction() as session:
            rows = list((await session.scalars(query)).all())
        return [_stored(row) for row in rows]

    async def get(self, registry: str, name: str, version: str | None) -> StoredEntry | None:
        """The stored entry at ``version`` (``None`` or ``latest``: the latest one)."""
        query = select(RegistryEntryRow).where(RegistryEntryRow.source == registry, RegistryEntryRow.name == name)
        if version in (None, "latest"):
            query = query.where(RegistryEntryRow.is_latest.is_(True))
        else:
            query = query.where(RegistryEntryRow.version == version)
        async with self._registry.transaction() as session:
            row = await session.scalar(query.limit(1))
        return None if row is None else _stored(row)


async def _save(session: AsyncSession, registry: str, items: list[RegistryItem], fetched: datetime) -> None:
    for item in items:
        server, meta = item.server, item.official
        values = {
            "description": server.description,
            "status": meta.status.value,
            "is_latest": meta.is_latest,
            "updated_at": meta.updated_at,
            "fetched_at": fetched,
            "item": item.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        if meta.is_latest:
            await session.execute(
                update(RegistryEntryRow)
                .where(RegistryEntryRow.source == registry, RegistryEntryRow.name == server.name)
                .values(is_latest=False)
            )
        row = await session.scalar(
            select(RegistryEntryRow).where(
                RegistryEntryRow.source == registry,
                RegistryEntryRow.name == server.name,
                RegistryEntryRow.version == server.version,
            )
        )
        if row is None:
            session.add(RegistryEntryRow(source=registry, name=server.name, version=server.version, **values))
        else:
            for key, value in values.items():
                setattr(row, key, value)
        await session.flush()


def _stored(row: RegistryEntryRow) -> StoredEntry:
    return StoredEntry(
        registry=row.source,
        item=RegistryItem.model_validate(row.item),
        fetched_at=_aware(row.fetched_at) or row.fetched_at,
    )


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
