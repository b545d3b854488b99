"""Migration 0009 on SQLite and PostgreSQL: the ``search_uses`` table learning from use
writes, and its downgrade removing it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry import migrate
from mcp_aggregator.search.use_store import UseStore
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import to_revision

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


async def test_0009_adds_the_search_uses_table_and_its_downgrade_drops_it(database: Database) -> None:
    await migrate(database.url, database.pg_schema)
    async with UseStore(database.settings()) as store:
        await store.add(AT - timedelta(days=2), "list a folder", "fs.list_directory")
        await store.add(AT, "read a file", "fs.read_file")
        assert await store.since(AT - timedelta(days=3)) == [
            ("list a folder", "fs.list_directory"),
            ("read a file", "fs.read_file"),
        ]
        assert await store.purge(AT - timedelta(days=1)) == 1
        assert await store.since(AT - timedelta(days=3)) == [("read a file", "fs.read_file")]
    await to_revision(database, "0008", down=True)
    async with UseStore(database.settings()) as store:
        with pytest.raises(RegistryError, match="cannot read the search uses"):
            await store.since(AT)
