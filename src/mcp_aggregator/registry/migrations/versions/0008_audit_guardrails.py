"""The audit trail keeps what the guardrails decided on a call.

A nullable JSON column ``guardrails``: a list of ``{rule, action, kind, where, found}``
(the labels of what was found, never a value); null for a call no rule acted on.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    column = sa.JSON().with_variant(JSONB(), "postgresql")
    op.add_column("audit_log", sa.Column("guardrails", column), schema=schema)


def downgrade() -> None:
    schema: str | None = context.config.attributes["schema"]
    op.drop_column("audit_log", "guardrails", schema=schema)
