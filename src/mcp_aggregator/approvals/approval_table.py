"""The ``approvals`` table (migration 0014), in the registry's database and schema."""

from __future__ import annotations

from sqlalchemy import Column, Index, MetaData, String, Table, Text

from mcp_aggregator.registry.tables import NAMING_CONVENTION, SCHEMA, Json, UtcDateTime

metadata = MetaData(naming_convention=NAMING_CONVENTION)

approvals = Table(
    "approvals",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("rule", String(64), nullable=False),
    Column("client", String(255), nullable=True),
    Column("profile", String(64), nullable=False),
    Column("server", String(255), nullable=False),
    Column("tool", String(512), nullable=False),
    Column("arguments", Json, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("ask", String(16), nullable=False),
    Column("replica", String(64), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("decided_at", UtcDateTime(), nullable=True),
    Column("decided_by", String(255), nullable=True),
    Column("via", String(16), nullable=True),
    Column("reason", Text, nullable=True),
    Index("ix_approvals_status", "status"),
    Index("ix_approvals_created_at", "created_at"),
    schema=SCHEMA,
)
