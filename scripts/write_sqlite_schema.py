"""Write the SQLite schema snapshot a new registry is created from
(``src/mcp_aggregator/registry/migrations/sqlite_schema.json``) after a migration changed.

Run: ``.venv/bin/python scripts/write_sqlite_schema.py``. It runs every migration with Alembic
on an SQLite database in memory and stores the statements left in ``sqlite_master``.
"""

from __future__ import annotations

from sqlalchemy import create_engine

from mcp_aggregator.registry.engine import run_migrations
from mcp_aggregator.registry.sqlite_schema import SNAPSHOT, SqliteSchema


def main() -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as connection:
        run_migrations(connection, None)
        SqliteSchema.of(connection).write()
    engine.dispose()
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    main()
