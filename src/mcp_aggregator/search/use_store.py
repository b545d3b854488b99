"""``UseStore``: the past uses search learns from, in the registry's database."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry.table_store import TableStore
from mcp_aggregator.search.use_table import search_uses


class UseStore(TableStore):
    """(time, query, tool) rows. ``async with UseStore(settings)`` opens an engine on the
    registry's database (whose migrations made the table); it opens once.

    Raises ``RegistryError`` when the database refuses a read or a write.
    """

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
