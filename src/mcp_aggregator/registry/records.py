"""Domain objects the registry takes and returns; never ORM rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from mcp_aggregator.health.server_state import ServerStatus

JsonObject = dict[str, Any]


class TransportType(StrEnum):
    STDIO = "STDIO"
    SSE = "SSE"
    HTTP = "HTTP"
    OPENAPI = "OPENAPI"
    A2A = "A2A"


class ServerSource(StrEnum):
    CONFIG = "config"
    API = "api"


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """A server to register or upsert. ``connection_config`` keeps ``${VAR}`` unexpanded.

    Validation of the name and of the transport-specific fields belongs to whoever builds
    the spec (settings, admin API); the registry stores what it is given.
    """

    name: str
    transport_type: TransportType
    connection_config: JsonObject
    description: str | None = None
    health_check_url: str | None = None
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as an upstream lists it (``original_name``, not namespaced)."""

    original_name: str
    description: str | None = None
    input_schema: JsonObject = field(default_factory=dict)
    output_schema: JsonObject | None = None
    annotations: JsonObject | None = None


@dataclass(frozen=True, slots=True)
class ServerRecord:
    id: str
    name: str
    description: str | None
    transport_type: TransportType
    connection_config: JsonObject
    health_check_url: str | None
    status: ServerStatus
    error_message: str | None
    tool_count: int
    registered_at: datetime
    connected_at: datetime | None
    last_health_check: datetime | None
    consecutive_failures: int
    last_error: str | None
    response_time_ms: float | None
    source: ServerSource
    enabled: bool = True
    """The connect intent every replica reconciles to (admin connect/disconnect, config ``enabled``)."""


@dataclass(frozen=True, slots=True)
class ToolRecord:
    id: str
    name: str
    """Namespaced: ``{server_name}.{original_name}``."""
    original_name: str
    description: str | None
    input_schema: JsonObject
    output_schema: JsonObject | None
    annotations: JsonObject | None
    source_server_id: str
    is_external: bool
    is_classified: bool
    skill_ids: list[str]
    primary_skill_id: str | None
    discovered_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ToolTally:
    """How many tools are registered and classified, and when one was last discovered."""

    total: int = 0
    classified: int = 0
    last_sync: datetime | None = None

    @classmethod
    def of(cls, tools: Sequence[ToolRecord]) -> ToolTally:
        return cls(
            len(tools),
            sum(1 for tool in tools if tool.is_classified),
            max((tool.updated_at for tool in tools), default=None),
        )


@dataclass(frozen=True, slots=True)
class ToolPinRecord:
    """The trusted definition of one tool (``fingerprint``, ``definition``) and, while the
    tool is held, the pending one. ``fingerprint`` is ``None`` for a new tool held unapproved."""

    server_id: str
    tool_name: str
    fingerprint: str | None
    definition: JsonObject | None
    pending_fingerprint: str | None = None
    pending_definition: JsonObject | None = None
    cleared_fingerprint: str | None = None
    """The definition an admin approved while a guardrail's finding held it (migration 0013)."""
    updated_at: datetime | None = None
