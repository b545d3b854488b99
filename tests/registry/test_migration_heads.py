"""A registry already at the newest migration opens without loading Alembic."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from alembic.config import Config
from alembic.script import ScriptDirectory

from mcp_aggregator.registry import migrate
from mcp_aggregator.registry.engine import (
    MIGRATIONS,
    applied_revisions,
    create_engine,
    head_revisions,
    target_schema,
)
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import to_revision

PROBE = """
import asyncio, json, sys
from mcp_aggregator.registry import migrate
asyncio.run(migrate(sys.argv[1]))
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in ("alembic", "mako"))))
"""


def test_the_heads_read_from_the_migration_files_are_alembics() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert head_revisions() == frozenset(ScriptDirectory.from_config(config).get_heads())


async def test_a_new_database_records_every_head_once_migrated(database: Database) -> None:
    engine = create_engine(database.url, database.pg_schema)
    schema = target_schema(database.url, database.pg_schema)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(applied_revisions, schema) == frozenset()
        await migrate(database.url, database.pg_schema)
        await migrate(database.url, database.pg_schema)
        async with engine.connect() as conn:
            assert await conn.run_sync(applied_revisions, schema) == head_revisions()
    finally:
        await engine.dispose()


async def _modules_loaded_by_migrate(url: str) -> list[str]:
    done = await anyio.run_process([sys.executable, "-c", PROBE, url], check=False)
    assert done.returncode == 0, done.stderr.decode()
    loaded: list[str] = json.loads(done.stdout)
    return loaded


async def test_opening_a_new_or_up_to_date_sqlite_registry_loads_no_alembic(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}"
    assert await _modules_loaded_by_migrate(url) == []
    assert await _modules_loaded_by_migrate(url) == []


async def test_opening_a_registry_behind_the_heads_runs_alembic(tmp_path: Path) -> None:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}", "mcp")
    await to_revision(database, "0015")
    assert "alembic" in await _modules_loaded_by_migrate(database.url)
    assert await _modules_loaded_by_migrate(database.url) == []
