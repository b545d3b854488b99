"""``SessionLedger``: the sealing keys and the changing part of sessions, in the registry.

Replicas on one PostgreSQL registry share its tables (migration 0010), so they share the
keys with no configuration and any replica learns what a session's client set since its
``initialize``: the log level, the resources it subscribed to, and whether the session
ended (a ``DELETE`` or its idle timer), after which its id answers 404 everywhere.
Sessions are keyed by the SHA-256 of their id; the id itself is never stored.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, Boolean, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from mcp_aggregator.registry import Registry
from mcp_aggregator.registry.tables import SCHEMA, Base, Json
from mcp_aggregator.sessions.key_ring import SealingKey
from mcp_aggregator.sessions.session_seal import session_digest


class SessionKeyRow(Base):
    """Migration 0010."""

    __tablename__ = "session_keys"
    __table_args__ = ({"schema": SCHEMA},)

    key_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    secret: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]


class SessionRow(Base):
    """Migration 0010."""

    __tablename__ = "sessions"
    __table_args__ = ({"schema": SCHEMA},)

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    log_level: Mapped[str | None] = mapped_column(String(16))
    subscriptions: Mapped[list[str]] = mapped_column(Json)
    ended: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime]


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a session's client changed since ``initialize``."""

    log_level: str | None = None
    subscriptions: tuple[str, ...] = field(default_factory=tuple)
    ended: bool = False


class SessionLedger:
    """Reads and writes ``session_keys`` and ``sessions``; every method is one transaction."""

    def __init__(self, registry: Registry, *, clock: Callable[[], datetime]) -> None:
        self._registry = registry
        self._clock = clock

    async def keys(self) -> list[SealingKey]:
        async with self._registry.read_transaction() as session:
            rows = (await session.scalars(select(SessionKeyRow))).all()
        return [SealingKey(row.key_id, base64.urlsafe_b64decode(row.secret), row.created_at) for row in rows]

    async def add_key(self, key: SealingKey) -> None:
        async with self._registry.transaction() as session:
            session.add(SessionKeyRow(key_id=key.key_id, secret=key.text(), created_at=key.created))

    async def retire_keys(self, created_before: datetime, keep: Sequence[int]) -> None:
        async with self._registry.transaction() as session:
            query = delete(SessionKeyRow).where(SessionKeyRow.created_at < created_before)
            if keep:
                query = query.where(SessionKeyRow.key_id.not_in(list(keep)))
            await session.execute(query)

    async def state(self, session_id: str) -> SessionState:
        async with self._registry.read_transaction() as session:
            row = await session.get(SessionRow, session_digest(session_id))
        if row is None:
            return SessionState()
        return SessionState(row.log_level, tuple(row.subscriptions), row.ended)

    async def record(self, session_id: str, **changes: Any) -> None:
        """Store ``changes`` (``log_level``, ``subscriptions``, ``ended``) for the session."""
        digest, now = session_digest(session_id), self._clock()

        def write(session: Session) -> None:
            row = session.get(SessionRow, digest, with_for_update=True)
            if row is None:
                row = SessionRow(digest=digest, log_level=None, subscriptions=[], ended=False)
                session.add(row)
            for name, value in changes.items():
                setattr(row, name, list(value) if name == "subscriptions" else value)
            row.updated_at = now

        # A session's end is answered once stored: one trip to a worker thread on an SQLite
        # file, not a dozen through a busy event loop (``Registry.write``).
        await self._registry.write(write)

    async def forget_before(self, moment: datetime) -> None:
        """Drop the rows of sessions whose ids have expired anyway."""
        async with self._registry.transaction() as session:
            await session.execute(delete(SessionRow).where(SessionRow.updated_at < moment))


def older_than(clock: Callable[[], datetime], secs: float) -> datetime:
    return clock() - timedelta(seconds=secs)
