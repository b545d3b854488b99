"""Learning from use: the (query, tool) pairs of searches followed by a call of a hit.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "search_uses",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("tool", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_search_uses"),
        schema=schema,
    )
    op.create_index("ix_search_uses_time", "search_uses", ["time"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("search_uses", schema=schema)
