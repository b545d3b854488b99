"""Servers may be bridged: transport types OPENAPI (a REST API from its OpenAPI document) and
A2A (an agent from its agent card) join STDIO, SSE and HTTP.

SQLite cannot alter a CHECK constraint, and rebuilding ``external_servers`` would cascade
the drop of the old table to every row that refers to it (tools, pins, credentials), so
the constraint's text is widened in place, as SQLite's own documentation describes for
changing a CHECK constraint (every stored row still satisfies the wider one).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import context, op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None

_NAME = "ck_external_servers_transport_type"
_BEFORE = "transport_type IN ('STDIO', 'SSE', 'HTTP')"
_AFTER = "transport_type IN ('STDIO', 'SSE', 'HTTP', 'OPENAPI', 'A2A')"


def _replace(old: str, new: str) -> None:
    schema: str | None = context.config.attributes["schema"]
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(_NAME, "external_servers", type_="check", schema=schema)
        op.create_check_constraint(_NAME, "external_servers", new, schema=schema)
        return
    version = op.get_bind().exec_driver_sql("PRAGMA schema_version").scalar_one()
    op.execute("PRAGMA writable_schema=ON")
    op.execute(
        f'UPDATE sqlite_master SET sql = replace(sql, "{old}", "{new}") '
        "WHERE type = 'table' AND name = 'external_servers'"
    )
    op.execute(f"PRAGMA schema_version={int(version) + 1}")
    op.execute("PRAGMA writable_schema=OFF")


def upgrade() -> None:
    _replace(_BEFORE, _AFTER)


def downgrade() -> None:
    _replace(_AFTER, _BEFORE)
