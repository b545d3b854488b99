"""Connect intent: whether replicas should hold a session to the server (shared desired state).

Live status stays per replica (each supervisor's own); ``enabled`` is what every replica
reconciles to, so an admin disconnect made through one replica holds on all of them.

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.add_column(
        "external_servers",
        sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        schema=schema,
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    with op.batch_alter_table("external_servers", schema=schema) as batch:
        batch.drop_column("enabled")
