"""Tool pins keep the definition an admin approved while a guardrail's finding held it.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.add_column("tool_pins", sa.Column("cleared_fingerprint", sa.String(64), nullable=True), schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_column("tool_pins", "cleared_fingerprint", schema=schema)
