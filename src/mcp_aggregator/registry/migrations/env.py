"""Alembic environment, run only through ``mcp_aggregator.registry.migrate``.

``migrate`` hands over a live connection (``config.attributes["connection"]``) inside
an open transaction, and the target schema (``config.attributes["schema"]``, ``None``
on SQLite). The schema is created here, before Alembic looks for its version table,
which lives in the same schema.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.schema import CreateSchema

config = context.config
connection: Connection = config.attributes["connection"]
schema: str | None = config.attributes["schema"]

if schema is not None:
    connection.execute(CreateSchema(schema, if_not_exists=True))

context.configure(connection=connection, target_metadata=None, version_table_schema=schema)

with context.begin_transaction():
    context.run_migrations()
