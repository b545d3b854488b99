"""A new SQLite registry is created from a snapshot of the migrations' schema, without
Alembic; the snapshot must be exactly what the migrations build."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection
from sqlalchemy import create_engine as create_sync_engine

from mcp_aggregator.registry import migrate
from mcp_aggregator.registry.engine import create_engine, head_revisions, run_migrations
from mcp_aggregator.registry.sqlite_schema import SqliteSchema, is_empty

Catalogue = tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]]]


def _catalogue(connection: Connection) -> Catalogue:
    """Every object SQLite records with its statement, the version rows and the pragmas a migration could set."""
    objects = connection.exec_driver_sql("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
    versions = connection.exec_driver_sql("SELECT version_num FROM alembic_version ORDER BY version_num")
    pragmas = [
        (name, connection.exec_driver_sql(f"PRAGMA {name}").scalar_one())
        for name in ("user_version", "application_id", "auto_vacuum", "encoding")
    ]
    return [tuple(row) for row in objects], [tuple(row) for row in versions], [tuple(p) for p in pragmas]


async def _catalogue_of(url: str) -> Catalogue:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_catalogue)
    finally:
        await engine.dispose()


async def test_a_new_sqlite_registry_has_the_schema_the_migrations_build(tmp_path: Path) -> None:
    migrated = f"sqlite+aiosqlite:///{tmp_path / 'migrated.db'}"
    engine = create_engine(migrated)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(run_migrations, None)
    finally:
        await engine.dispose()
    created = f"sqlite+aiosqlite:///{tmp_path / 'created.db'}"
    await migrate(created)
    assert await _catalogue_of(created) == await _catalogue_of(migrated)


def test_the_snapshot_is_what_the_migrations_build_now() -> None:
    engine = create_sync_engine("sqlite://")
    try:
        with engine.begin() as connection:
            run_migrations(connection, None)
            built = SqliteSchema.of(connection)
    finally:
        engine.dispose()
    assert SqliteSchema.read() == built, (
        "the SQLite schema snapshot is behind the migrations: run .venv/bin/python scripts/write_sqlite_schema.py"
    )
    assert built.heads == head_revisions()


def test_a_database_with_tables_is_not_empty() -> None:
    engine = create_sync_engine("sqlite://")
    try:
        with engine.begin() as connection:
            assert is_empty(connection)
            connection.exec_driver_sql("CREATE TABLE other (id INTEGER)")
            assert not is_empty(connection)
    finally:
        engine.dispose()
