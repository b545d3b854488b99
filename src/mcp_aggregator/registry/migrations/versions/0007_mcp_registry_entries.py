"""The stored copy of each MCP Registry: one row per (source registry, entry name, version).

``item`` is the v0.1 item as fetched (``server`` and the registry's metadata); ``status``,
``is_latest`` and ``updated_at`` are kept beside it for search and incremental fetches
(``updated_since``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "mcp_registry_entries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("version", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("is_latest", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("item", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mcp_registry_entries"),
        sa.UniqueConstraint("source", "name", "version", name="uq_mcp_registry_entries_source_name_version"),
        schema=schema,
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("mcp_registry_entries", schema=schema)
