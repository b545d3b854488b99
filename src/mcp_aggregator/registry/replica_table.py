"""The ``replicas`` table (migration 0016), in the registry's database and schema."""

from __future__ import annotations

from sqlalchemy import Column, Index, MetaData, String, Table

from mcp_aggregator.registry.tables import NAMING_CONVENTION, SCHEMA, UtcDateTime

metadata = MetaData(naming_convention=NAMING_CONVENTION)

replicas = Table(
    "replicas",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("home", String(2048), nullable=True),
    Column("started_at", UtcDateTime(), nullable=False),
    Column("last_seen", UtcDateTime(), nullable=False),
    Index("ix_replicas_last_seen", "last_seen"),
    schema=SCHEMA,
)
