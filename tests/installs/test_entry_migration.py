"""Migrations 0007 and 0012 on SQLite and PostgreSQL: the stored registry copies and their
listing state get their tables, and the downgrades take them away again."""

from __future__ import annotations

from mcp_aggregator.registry import migrate
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import tables, to_revision


async def test_0007_adds_the_registry_copies_and_its_downgrade_removes_them(database: Database) -> None:
    await migrate(database.url, database.pg_schema)
    assert "mcp_registry_entries" in await tables(database)
    await to_revision(database, "0006", down=True)
    assert "mcp_registry_entries" not in await tables(database)
    assert "audit_log" in await tables(database)
    await migrate(database.url, database.pg_schema)
    assert "mcp_registry_entries" in await tables(database)


async def test_0012_adds_the_listing_state_and_its_downgrade_removes_it(database: Database) -> None:
    await to_revision(database, "0011")
    assert "mcp_registry_syncs" not in await tables(database)
    await migrate(database.url, database.pg_schema)
    assert "mcp_registry_syncs" in await tables(database)
    await to_revision(database, "0011", down=True)
    assert {"mcp_registry_entries", "mcp_registry_syncs"} & await tables(database) == {"mcp_registry_entries"}
