"""Migration 0013 on SQLite and PostgreSQL: a pin keeps the definition an admin cleared of a
guardrail's finding (``cleared_fingerprint``); its downgrade drops that column."""

from __future__ import annotations

from sqlalchemy import inspect

from mcp_aggregator.registry import Registry, ServerSpec, ToolPinRecord, TransportType, migrate
from mcp_aggregator.registry.engine import create_engine, target_schema
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import to_revision


async def pin_columns(database: Database) -> set[str]:
    schema = target_schema(database.url, database.pg_schema)
    engine = create_engine(database.url, database.pg_schema)
    try:
        async with engine.connect() as conn:
            columns = await conn.run_sync(lambda sync: inspect(sync).get_columns("tool_pins", schema=schema))
    finally:
        await engine.dispose()
    return {column["name"] for column in columns}


async def test_0013_stores_a_pins_clearance_and_its_downgrade_drops_it(database: Database) -> None:
    await migrate(database.url, database.pg_schema)
    async with Registry(database.settings()) as registry:
        git = await registry.register_server(ServerSpec("git", TransportType.STDIO, {"command": "g"}))
        pin = ToolPinRecord(git.id, "log", "f" * 64, {"name": "log"}, cleared_fingerprint="f" * 64)
        await registry.save_tool_pins(git.id, [pin, ToolPinRecord(git.id, "diff", "e" * 64, {"name": "diff"})])
        stored = {p.tool_name: p.cleared_fingerprint for p in await registry.list_tool_pins(git.id)}
        assert stored == {"diff": None, "log": "f" * 64}
    await to_revision(database, "0012", down=True)
    assert "cleared_fingerprint" not in await pin_columns(database)
    assert "pending_fingerprint" in await pin_columns(database)
    await migrate(database.url, database.pg_schema)
    assert "cleared_fingerprint" in await pin_columns(database)
