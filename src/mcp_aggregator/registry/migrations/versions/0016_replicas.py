"""Replicas announce that they live: a row per running gateway process on a shared registry.

``id`` is the replica's random id (the one an approval's ``replica`` names), ``home`` the
base URL other replicas reach it at when known, ``last_seen`` its latest heartbeat. A live
replica settles the held calls of one not seen for a bounded time; a replica that stops
cleanly deletes its row.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("home", sa.String(2048), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_replicas"),
        schema=schema,
    )
    op.create_index("ix_replicas_last_seen", "replicas", ["last_seen"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_index("ix_replicas_last_seen", "replicas", schema=schema)
    op.drop_table("replicas", schema=schema)
