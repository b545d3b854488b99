"""Upstream credentials: OAuth tokens and client registrations, sealed (encrypted) per server.

``sealed`` is encrypted by the gateway before it reaches the database; ``auth_status`` and
``expires_at`` stay readable so every replica (and the API after a restart) can say where
a server's sign-in stands. ``subject`` is empty for the server's own credential.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    servers_id = f"{schema}.external_servers.id" if schema else "external_servers.id"
    op.create_table(
        "upstream_credentials",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("server_id", sa.String(36), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False, server_default=""),
        sa.Column("auth_status", sa.String(32), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_upstream_credentials"),
        sa.UniqueConstraint("server_id", "subject", name="uq_upstream_credentials_server_subject"),
        sa.ForeignKeyConstraint(
            ["server_id"],
            [servers_id],
            name="fk_upstream_credentials_server_id_external_servers",
            ondelete="CASCADE",
        ),
        schema=schema,
    )


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_table("upstream_credentials", schema=schema)
