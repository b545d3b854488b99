"""The audit trail says which calls the tool result cache answered (``cached``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.add_column(
        "audit_log", sa.Column("cached", sa.Boolean(), nullable=False, server_default=sa.false()), schema=schema
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_column("audit_log", "cached", schema=schema)
