"""The audit trail keeps the HTTP request's id beside the JSON-RPC id.

``request_id`` held the client's JSON-RPC id; it becomes ``jsonrpc_id`` (its rows kept), and
a new ``request_id`` holds the HTTP request's (``X-Request-Id``, the access log's), indexed
so that one request's entries are found by it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    # ALTER TABLE ... RENAME COLUMN: SQLite (3.25 and later) and PostgreSQL both take it in place.
    op.alter_column("audit_log", "request_id", new_column_name="jsonrpc_id", schema=schema)
    op.add_column("audit_log", sa.Column("request_id", sa.String(128)), schema=schema)
    op.create_index("ix_audit_log_request_id", "audit_log", ["request_id"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_index("ix_audit_log_request_id", "audit_log", schema=schema)
    op.drop_column("audit_log", "request_id", schema=schema)
    op.alter_column("audit_log", "jsonrpc_id", new_column_name="request_id", schema=schema)
