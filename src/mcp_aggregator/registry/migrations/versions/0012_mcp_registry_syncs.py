"""When each MCP Registry's stored copy was last listed, and how far: one row per registry.

``complete`` says a full listing finished (until then a refresh lists everything again);
``newest_updated_at`` is the highest ``updatedAt`` seen in a listing (what the next
``updated_since`` asks from); ``attempted_at``, ``failures`` and ``last_error`` let a
registry that does not answer be asked again only after a back-off. An install's live
look-up writes entries but never this row, so it cannot make a refresh skip anything.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "mcp_registry_syncs",
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("listed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("complete", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("newest_updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("source", name="pk_mcp_registry_syncs"),
        schema=schema,
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("mcp_registry_syncs", schema=schema)
