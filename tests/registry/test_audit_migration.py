"""Migration 0006 on SQLite and PostgreSQL: the audit's JSON-RPC ids move to ``jsonrpc_id``
with their rows, and ``request_id`` (the HTTP request's) is new, indexed and empty; its
downgrade gives 0005's table back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, inspect, text

from mcp_aggregator.audit import AuditEntry, AuditLog, AuditQuery, Outcome
from mcp_aggregator.registry import migrate
from mcp_aggregator.registry.engine import MIGRATIONS, create_engine, target_schema
from tests.registry.conftest import Database

AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


async def to_revision(database: Database, revision: str, *, down: bool = False) -> None:
    """Upgrade (or downgrade) the database to ``revision`` only, as ``migrate`` runs Alembic."""
    schema = target_schema(database.url, database.pg_schema)

    def run(connection: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        config.attributes["schema"] = schema
        (command.downgrade if down else command.upgrade)(config, revision)

    engine = create_engine(database.url, database.pg_schema)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(run)
    finally:
        await engine.dispose()


async def tables(database: Database) -> set[str]:
    """The tables in the database's schema."""
    schema = target_schema(database.url, database.pg_schema)
    engine = create_engine(database.url, database.pg_schema)
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names(schema=schema)))
    finally:
        await engine.dispose()


async def sql(database: Database, statement: str) -> list[tuple[object, ...]]:
    schema = target_schema(database.url, database.pg_schema)
    table = "audit_log" if schema is None else f'"{schema}".audit_log'
    engine = create_engine(database.url, database.pg_schema)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(statement.format(table=table)))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        await engine.dispose()


async def test_0006_keeps_the_jsonrpc_ids_and_adds_the_http_request_id(database: Database) -> None:
    await to_revision(database, "0005")
    await sql(
        database,
        "INSERT INTO {table} (time, profile, method, server, tool, outcome, duration_ms, request_id) "
        "VALUES ('2026-11-25 12:00:00+00:00', 'default', 'tools/call', 'alpha', 'echo', 'ok', 1.5, '17')",
    )
    await migrate(database.url, database.pg_schema)

    async with AuditLog(database.settings()) as log:
        [old] = (await log.query(AuditQuery())).items
        assert (old.jsonrpc_id, old.request_id, old.tool) == ("17", None, "echo")
        new = AuditEntry(AT, None, "default", "tools/call", "alpha", "add", Outcome.OK, 2.0, None)
        await log.insert([replace(new, request_id="abc-123", jsonrpc_id="3")])
        [found] = (await log.query(AuditQuery(request_id="abc-123"))).items
        assert (found.tool, found.request_id, found.jsonrpc_id) == ("add", "abc-123", "3")
        assert (await log.query(AuditQuery(request_id="nothing"))).items == ()

    await to_revision(database, "0005", down=True)
    assert sorted(await sql(database, "SELECT request_id FROM {table}")) == [("17",), ("3",)]
