"""``SyncState``: how far each registry's stored copy has been listed (migration 0012).

Only a listing moves it: the time of the last one that succeeded, whether a full one ever
finished, and the highest ``updatedAt`` a listing returned (what the next ``updated_since``
asks from). An install's look-up stores its entry too, but newer than the rest of the copy,
so deriving these from the entries would make a refresh skip what changed before it.
A failed attempt is recorded as well, so that while a registry does not answer each
search does not wait for it again: the next try waits a back-off that doubles per
failure, up to the registry's ``refresh_secs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Boolean, Integer, String, Text, false
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from mcp_aggregator.registry.tables import SCHEMA, Base

RETRY_SECS = 30.0
"""The wait after a first failed refresh; it doubles per failure, up to ``refresh_secs``."""


class RegistrySyncRow(Base):
    __tablename__ = "mcp_registry_syncs"
    __table_args__ = ({"schema": SCHEMA},)

    source: Mapped[str] = mapped_column(String(255), primary_key=True)
    listed_at: Mapped[datetime | None]
    complete: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    newest_updated_at: Mapped[datetime | None]
    attempted_at: Mapped[datetime | None]
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)


@dataclass(frozen=True)
class SyncState:
    listed_at: datetime | None = None
    """When a listing (full or ``updated_since``) last succeeded."""
    complete: bool = False
    """A full listing has finished: later ones may ask ``updated_since``."""
    newest_updated_at: datetime | None = None
    attempted_at: datetime | None = None
    failures: int = 0
    """Failed attempts since the last success."""
    last_error: str | None = None

    @property
    def since(self) -> datetime | None:
        """What to ask ``updated_since`` from; None: list everything."""
        return self.newest_updated_at if self.complete else None

    def retry_at(self, refresh_secs: float) -> datetime | None:
        """When a failing registry may be asked again (None: it is not failing)."""
        if not self.failures or self.attempted_at is None:
            return None
        wait = min(RETRY_SECS * 2 ** min(self.failures - 1, 16), max(refresh_secs, RETRY_SECS))
        return self.attempted_at + timedelta(seconds=wait)

    def due(self, now: datetime, refresh_secs: float) -> bool:
        """Whether a search at ``now`` should refresh the copy first."""
        retry = self.retry_at(refresh_secs)
        if retry is not None and now < retry:
            return False
        return self.listed_at is None or (now - self.listed_at).total_seconds() >= refresh_secs


async def read_sync(session: AsyncSession, registry: str) -> SyncState:
    row = await session.get(RegistrySyncRow, registry)
    if row is None:
        return SyncState()
    return SyncState(
        listed_at=row.listed_at,
        complete=row.complete,
        newest_updated_at=row.newest_updated_at,
        attempted_at=row.attempted_at,
        failures=row.failures,
        last_error=row.last_error,
    )


async def write_sync(session: AsyncSession, registry: str, state: SyncState) -> None:
    row = await session.get(RegistrySyncRow, registry)
    if row is None:
        row = RegistrySyncRow(source=registry)
        session.add(row)
    row.listed_at = state.listed_at
    row.complete = state.complete
    row.newest_updated_at = state.newest_updated_at
    row.attempted_at = state.attempted_at
    row.failures = state.failures
    row.last_error = state.last_error
    await session.flush()


def after_listing(state: SyncState, now: datetime, updated: list[datetime | None]) -> SyncState:
    """``state`` after a listing that succeeded at ``now`` and returned items updated at ``updated``."""
    seen = [when for when in (state.newest_updated_at, *updated) if when is not None]
    return SyncState(listed_at=now, complete=True, newest_updated_at=max(seen, default=None), attempted_at=now)


def after_failure(state: SyncState, now: datetime, error: str) -> SyncState:
    return SyncState(
        listed_at=state.listed_at,
        complete=state.complete,
        newest_updated_at=state.newest_updated_at,
        attempted_at=now,
        failures=state.failures + 1,
        last_error=error,
    )
