"""Sealed sessions: the keys replicas share, and what changes during a session.

``session_keys`` holds the AES-256-GCM keys that seal ``Mcp-Session-Id`` and the gateway's
``requestState`` (newest seals); ``sessions`` holds, per session (by the SHA-256 of its id,
never the id), its log level and resource subscriptions, and whether it ended.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.create_table(
        "session_keys",
        sa.Column("key_id", sa.BigInteger(), nullable=False),
        sa.Column("secret", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_id", name="pk_session_keys"),
        schema=schema,
    )
    op.create_table(
        "sessions",
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("log_level", sa.String(16), nullable=True),
        sa.Column("subscriptions", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("ended", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_sessions"),
        schema=schema,
    )
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"], schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_index("ix_sessions_updated_at", "sessions", schema=schema)
    op.drop_table("sessions", schema=schema)
    op.drop_table("session_keys", schema=schema)
