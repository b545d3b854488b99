"""``UseStore``: the past uses search learns from, in the registry's database."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from types import TracebackType
from typing import Self

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry import RegistrySettings
from mcp_aggregator.registry.engine import create_engine
from mcp_aggregator.search.use_table import search_uses


class UseStoreState(Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class UseStore:
    """(time, query, tool) rows. ``async with UseStore(settings)`` opens an engine on the
    registry's database (whose migrations made the table); it opens once.

    Raises ``RegistryError`` when the database refuses a read or a write.
    """

    def __init__(self, settings: RegistrySettings) -> None:
        self._settings = settings
        self._engine: AsyncEngine | None = None
        self._state = UseStoreState.UNOPENED

    async def __aenter__(self) -> Self:
        if self._state is not UseStoreState.UNOPENED:
            raise RuntimeError(f"a UseStore opens once; this one is {self._state.value}")
        self._engine = create_engine(self._settings.database_url, self._settings.pg_schema)
        self._state = UseStoreState.OPEN
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._state = UseStoreState.CLOSED
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise RuntimeError(f"the UseStore is {self._state.value}, not open")
        return self._engine

    async def add(self, time: datetime, query: str, tool: str) -> None:
        try:
            async with self.engine.begin() as conn:
                await conn.execute(insert(search_uses), [{"time": time, "query": query, "tool": tool}])
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot store a search use: {exc}") from exc

    async def since(self, time: datetime) -> list[tuple[str, str]]:
        """(query, tool) of the uses at or after ``time``, oldest first."""
        statement = (
            select(search_uses.c.query, search_uses.c.tool).where(search_uses.c.time >= time).order_by(search_uses.c.id)
        )
        try:
            async with self.engine.connect() as conn:
                rows = (await conn.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot read the search uses: {exc}") from exc
        return [(str(query), str(tool)) for query, tool in rows]

    async def purge(self, older_than: datetime | None = None) -> int:
        """Removes the uses from before ``older_than`` (every use when None); how many went."""
        statement = delete(search_uses)
        if older_than is not None:
            statement = statement.where(search_uses.c.time < older_than)
        try:
            async with self.engine.begin() as conn:
                result = await conn.execute(statement)
        except SQLAlchemyError as exc:
            raise RegistryError(f"cannot purge the search uses: {exc}") from exc
        return int(result.rowcount or 0)
