"""The ``search_uses`` table (migration 0009), in the registry's database and schema."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, Table, Text

from mcp_aggregator.registry.tables import NAMING_CONVENTION, SCHEMA, UtcDateTime

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# SQLite numbers rows itself only for an INTEGER PRIMARY KEY; PostgreSQL gets a bigint identity.
_ID = BigInteger().with_variant(Integer(), "sqlite")

search_uses = Table(
    "search_uses",
    metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("time", UtcDateTime(), nullable=False),
    Column("query", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Index("ix_search_uses_time", "time"),
    schema=SCHEMA,
)
