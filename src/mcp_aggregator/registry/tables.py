"""SQL tables of the registry (SQLAlchemy 2 declarative).

Tables are declared in schema ``mcp``; the engine maps it with ``schema_translate_map``
to the configured PostgreSQL schema, or to no schema on SQLite. Enumerations are stored
as plain strings guarded by CHECK constraints, so no PostgreSQL enum types need
migrating. The migrations in ``migrations/versions`` must stay in step with this file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeEngine

from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry.records import ServerRecord, ServerSource, ToolPinRecord, ToolRecord, TransportType

SCHEMA = "mcp"
"""The schema name the tables are declared in; translated per engine."""

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class JsonDocument(TypeDecorator[Any]):
    """``JSON``, stored as ``JSONB`` on PostgreSQL. Unlike ``JSON().with_variant(JSONB(),
    "postgresql")`` it needs SQLAlchemy's PostgreSQL dialect (2.3 MB) only once an engine of
    that dialect compiles it, not at every start. ``None`` stays JSON ``null``, not SQL
    ``NULL``, as with ``JSON`` itself (``should_evaluate_none``; the dialect's type binds it)."""

    impl = JSON
    cache_ok = True
    should_evaluate_none = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())


Json = JsonDocument()


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite hands back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the registry; use timezone-aware UTC")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime()}


class ExternalServerRow(Base):
    __tablename__ = "external_servers"
    __table_args__ = (
        UniqueConstraint("name"),
        CheckConstraint("transport_type IN ('STDIO', 'SSE', 'HTTP', 'OPENAPI', 'A2A')", name="transport_type"),
        CheckConstraint("status IN ('DISCONNECTED', 'CONNECTING', 'CONNECTED', 'DEGRADED', 'ERROR')", name="status"),
        CheckConstraint("source IN ('config', 'api')", name="source"),
        {"schema": SCHEMA},
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    transport_type: Mapped[str] = mapped_column(String(16))
    connection_config: Mapped[dict[str, Any]] = mapped_column(Json)
    health_check_url: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    error_message: Mapped[str | None] = mapped_column(Text)
    tool_count: Mapped[int] = mapped_column(Integer, default=0)
    registered_at: Mapped[datetime]
    connected_at: Mapped[datetime | None]
    last_health_check: Mapped[datetime | None]
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    response_time_ms: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    def to_record(self) -> ServerRecord:
        return ServerRecord(
            id=self.id,
            name=self.name,
            description=self.description,
            transport_type=TransportType(self.transport_type),
            connection_config=self.connection_config,
            health_check_url=self.health_check_url,
            status=ServerStatus(self.status),
            error_message=self.error_message,
            tool_count=self.tool_count,
            registered_at=self.registered_at,
            connected_at=self.connected_at,
            last_health_check=self.last_health_check,
            consecutive_failures=self.consecutive_failures,
            last_error=self.last_error,
            response_time_ms=self.response_time_ms,
            source=ServerSource(self.source),
            enabled=self.enabled,
        )


class ToolRow(Base):
    __tablename__ = "tools"
    __table_args__ = (
        UniqueConstraint("name"),
        UniqueConstraint("source_server_id", "original_name", name="uq_tools_server_original_name"),
        Index("ix_tools_source_server_id", "source_server_id"),
        {"schema": SCHEMA},
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    original_name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    input_schema: Mapped[dict[str, Any]] = mapped_column(Json)
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(Json)
    annotations: Mapped[dict[str, Any] | None] = mapped_column(Json)
    source_server_id: Mapped[str] = mapped_column(
        String(36), ForeignKey(f"{SCHEMA}.external_servers.id", ondelete="CASCADE")
    )
    is_external: Mapped[bool] = mapped_column(Boolean, default=True)
    is_classified: Mapped[bool] = mapped_column(Boolean, default=False)
    skill_ids: Mapped[list[str]] = mapped_column(Json)
    primary_skill_id: Mapped[str | None] = mapped_column(String(255))
    discovered_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    def to_record(self) -> ToolRecord:
        return ToolRecord(
            id=self.id,
            name=self.name,
            original_name=self.original_name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
            source_server_id=self.source_server_id,
            is_external=self.is_external,
            is_classified=self.is_classified,
            skill_ids=list(self.skill_ids),
            primary_skill_id=self.primary_skill_id,
            discovered_at=self.discovered_at,
            updated_at=self.updated_at,
        )


class ToolPinRow(Base):
    """Definition pinning (migration 0002): one row per tool name a server ever listed."""

    __tablename__ = "tool_pins"
    __table_args__ = (
        UniqueConstraint("server_id", "tool_name", name="uq_tool_pins_server_tool"),
        {"schema": SCHEMA},
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    server_id: Mapped[str] = mapped_column(String(36), ForeignKey(f"{SCHEMA}.external_servers.id", ondelete="CASCADE"))
    tool_name: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    definition: Mapped[dict[str, Any] | None] = mapped_column(Json)
    pending_fingerprint: Mapped[str | None] = mapped_column(String(64))
    pending_definition: Mapped[dict[str, Any] | None] = mapped_column(Json)
    cleared_fingerprint: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime]

    def to_record(self) -> ToolPinRecord:
        return ToolPinRecord(
            server_id=self.server_id,
            tool_name=self.tool_name,
            fingerprint=self.fingerprint,
            definition=self.definition,
            pending_fingerprint=self.pending_fingerprint,
            pending_definition=self.pending_definition,
            cleared_fingerprint=self.cleared_fingerprint,
            updated_at=self.updated_at,
        )
