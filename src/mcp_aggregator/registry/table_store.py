"""``TableStore``: a store of its own rows in the registry's database, opened once.

The audit log and search's past uses keep tables the registry's migrations made, each with an
engine of its own (so their writes never queue behind the registry's); this holds the part
they share: the engine's life and the state that refuses reuse.
"""

from __future__ import annotations

from enum import Enum
from types import TracebackType
from typing import Self

from sqlalchemy.ext.asyncio import AsyncEngine

from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.registry.engine import create_engine


class TableStoreState(Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class TableStore:
    """``async with`` opens an engine on the registry's database; a store opens once."""

    def __init__(self, settings: RegistrySettings) -> None:
        self._settings = settings
        self._engine: AsyncEngine | None = None
        self._state = TableStoreState.UNOPENED

    async def __aenter__(self) -> Self:
        if self._state is not TableStoreState.UNOPENED:
            raise RuntimeError(f"{type(self).__name__} opens once; this one is {self._state.value}")
        self._engine = create_engine(self._settings.database_url, self._settings.pg_schema)
        self._state = TableStoreState.OPEN
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._state = TableStoreState.CLOSED
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise RuntimeError(f"the {type(self).__name__} is {self._state.value}, not open")
        return self._engine
