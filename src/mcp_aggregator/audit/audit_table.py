"""The ``audit_log`` table (migrations 0005, 0006, 0008 and 0011), in the registry's database and schema."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    false,
)

from mcp_aggregator.registry.tables import NAMING_CONVENTION, SCHEMA, Json, UtcDateTime

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# SQLite numbers rows itself only for an INTEGER PRIMARY KEY; PostgreSQL gets a bigint identity.
_ID = BigInteger().with_variant(Integer(), "sqlite")

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("time", UtcDateTime(), nullable=False),
    Column("client", String(255)),
    Column("profile", String(255), nullable=False),
    Column("method", String(64), nullable=False),
    Column("server", String(255), nullable=False),
    Column("tool", Text, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("duration_ms", Float, nullable=False),
    Column("arguments_digest", String(64)),
    Column("arguments", Json),
    Column("error", Text),
    Column("jsonrpc_id", String(255)),
    Column("request_id", String(128)),
    Column("guardrails", Json),
    Column("cached", Boolean, nullable=False, server_default=false()),
    CheckConstraint("outcome IN ('ok', 'error', 'denied')", name="outcome"),
    Index("ix_audit_log_time", "time"),
    Index("ix_audit_log_client", "client", "id"),
    Index("ix_audit_log_tool", "tool", "id"),
    Index("ix_audit_log_request_id", "request_id"),
    schema=SCHEMA,
)
