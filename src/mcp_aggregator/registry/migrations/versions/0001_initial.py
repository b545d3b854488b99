"""Initial tables: external_servers and tools.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_json = sa.JSON().with_variant(JSONB(), "postgresql")


def _timestamp(name: str, *, nullable: bool) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "external_servers",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("transport_type", sa.String(16), nullable=False),
        sa.Column("connection_config", _json, nullable=False),
        sa.Column("health_check_url", sa.Text(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("tool_count", sa.Integer(), nullable=False),
        _timestamp("registered_at", nullable=False),
        _timestamp("connected_at", nullable=True),
        _timestamp("last_health_check", nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("response_time_ms", sa.Float(), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_external_servers"),
        sa.UniqueConstraint("name", name="uq_external_servers_name"),
        sa.CheckConstraint("transport_type IN ('STDIO', 'SSE', 'HTTP')", name="ck_external_servers_transport_type"),
        sa.CheckConstraint(
            "status IN ('DISCONNECTED', 'CONNECTING', 'CONNECTED', 'DEGRADED', 'ERROR')",
            name="ck_external_servers_status",
        ),
        sa.CheckConstraint("source IN ('config', 'api')", name="ck_external_servers_source"),
        schema=schema,
    )
    servers_id = f"{schema}.external_servers.id" if schema else "external_servers.id"
    op.create_table(
        "tools",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("original_name", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("input_schema", _json, nullable=False),
        sa.Column("output_schema", _json, nullable=True),
        sa.Column("annotations", _json, nullable=True),
        sa.Column("source_server_id", sa.String(36), nullable=False),
        sa.Column("is_external", sa.Boolean(), nullable=False),
        sa.Column("is_classified", sa.Boolean(), nullable=False),
        sa.Column("skill_ids", _json, nullable=False),
        sa.Column("primary_skill_id", sa.String(255), nullable=True),
        _timestamp("discovered_at", nullable=False),
        _timestamp("updated_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tools"),
        sa.UniqueConstraint("name", name="uq_tools_name"),
        sa.UniqueConstraint("source_server_id", "original_name", name="uq_tools_server_original_name"),
        sa.ForeignKeyConstraint(
            ["source_server_id"],
            [servers_id],
            name="fk_tools_source_server_id_external_servers",
            ondelete="CASCADE",
        ),
        schema=schema,
    )
    op.create_index("ix_tools_source_server_id", "tools", ["source_server_id"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_index("ix_tools_source_server_id", table_name="tools", schema=schema)
    op.drop_table("tools", schema=schema)
    op.drop_table("external_servers", schema=schema)
