from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.replicas.cluster import drop_schema, fresh_schema


@pytest.fixture
async def pg_schema() -> AsyncIterator[str]:
    """A PostgreSQL schema of this test's own (the registry tests use others), dropped afterwards."""
    schema = await fresh_schema()
    try:
        yield schema
    finally:
        with anyio.CancelScope(shield=True):
            await drop_schema(schema)
