"""Registry fixtures: every test runs against SQLite (a temp file) and PostgreSQL.

PostgreSQL tests each get a schema of their own (``mcp_t_<random>``), created by the
migrations and dropped afterwards, so runs sharing the database do not interfere. If
PostgreSQL is unreachable they skip locally and fail when ``CI`` is set.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mcp_aggregator.registry import Limits, Registry, RegistrySettings

PG_URL = os.environ.get("MCP_AGGREGATOR_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Database:
    url: str
    pg_schema: str

    def settings(self, **limits: int) -> RegistrySettings:
        return RegistrySettings(database_url=self.url, pg_schema=self.pg_schema, limits=Limits(**limits))


async def _pg_engine_or_skip() -> AsyncEngine:
    engine = create_async_engine(PG_URL, connect_args={"timeout": 5})
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except (OSError, DBAPIError) as exc:
        await engine.dispose()
        reason = f"PostgreSQL unreachable at {PG_URL}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return engine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        yield Database(f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}", "mcp")
        return
    schema = f"mcp_t_{uuid.uuid4().hex[:12]}"
    engine = await _pg_engine_or_skip()
    try:
        yield Database(PG_URL, schema)
    finally:
        try:
            async with engine.begin() as conn:
                await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        finally:
            await engine.dispose()


@pytest.fixture
async def registry(database: Database) -> AsyncIterator[Registry]:
    async with Registry(database.settings()) as opened:
        yield opened


@pytest.fixture
def open_registry(database: Database) -> Callable[..., Registry]:
    """A factory for extra registries on the same database (with other limits)."""

    def make(**limits: int) -> Registry:
        return Registry(database.settings(**limits))

    return make
