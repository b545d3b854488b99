"""Tool-definition pins: the trusted fingerprint of each tool, and a pending one while held.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    servers_id = f"{schema}.external_servers.id" if schema else "external_servers.id"
    op.create_table(
        "tool_pins",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("server_id", sa.String(36), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("definition", _json, nullable=True),
        sa.Column("pending_fingerprint", sa.String(64), nullable=True),
        sa.Column("pending_definition", _json, nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tool_pins"),
        sa.UniqueConstraint("server_id", "tool_name", name="uq_tool_pins_server_tool"),
        sa.ForeignKeyConstraint(
            ["server_id"], [servers_id], name="fk_tool_pins_server_id_external_servers", ondelete="CASCADE"
        ),
        schema=schema,
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("tool_pins", schema=schema)
