"""Approvals: tool calls held for a person, and what was decided.

A row per held call, bound to its call by ``digest``; ``replica`` is the gateway process
that holds the call; decided rows stay as the record of who decided what.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("rule", sa.String(64), nullable=False),
        sa.Column("client", sa.String(255), nullable=True),
        sa.Column("profile", sa.String(64), nullable=False),
        sa.Column("server", sa.String(255), nullable=False),
        sa.Column("tool", sa.String(512), nullable=False),
        sa.Column("arguments", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("ask", sa.String(16), nullable=False),
        sa.Column("replica", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(255), nullable=True),
        sa.Column("via", sa.String(16), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_approvals"),
        schema=schema,
    )
    op.create_index("ix_approvals_status", "approvals", ["status"], schema=schema)
    op.create_index("ix_approvals_created_at", "approvals", ["created_at"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_index("ix_approvals_created_at", "approvals", schema=schema)
    op.drop_index("ix_approvals_status", "approvals", schema=schema)
    op.drop_table("approvals", schema=schema)
