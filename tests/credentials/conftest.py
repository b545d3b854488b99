from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from tests.registry.conftest import PG_URL, Database, _pg_engine_or_skip


@pytest.fixture
async def postgres() -> AsyncIterator[Database]:
    """A fresh schema on the test PostgreSQL (skipped locally when none listens), dropped after."""
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
