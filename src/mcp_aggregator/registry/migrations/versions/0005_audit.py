"""The audit trail: one row per call through the relay's pipeline (``audit/``).

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0005"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("client", sa.String(255)),
        sa.Column("profile", sa.String(255), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("server", sa.String(255), nullable=False),
        sa.Column("tool", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("arguments_digest", sa.String(64)),
        sa.Column("arguments", sa.JSON().with_variant(JSONB(), "postgresql")),
        sa.Column("error", sa.Text()),
        sa.Column("request_id", sa.String(255)),
        sa.CheckConstraint("outcome IN ('ok', 'error', 'denied')", name="ck_audit_log_outcome"),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
        schema=schema,
    )
    op.create_index("ix_audit_log_time", "audit_log", ["time"], schema=schema)
    op.create_index("ix_audit_log_client", "audit_log", ["client", "id"], schema=schema)
    op.create_index("ix_audit_log_tool", "audit_log", ["tool", "id"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("audit_log", schema=schema)
