"""The registry: servers and tools persisted in SQLite or PostgreSQL (schema ``mcp``)."""

from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.registry.engine import migrate
from mcp_aggregator.registry.limits import Limits, check_server_limit, check_session_limit, check_tool_limits
from mcp_aggregator.registry.records import (
    ServerRecord,
    ServerSource,
    ServerSpec,
    ToolPinRecord,
    ToolRecord,
    ToolSpec,
    ToolTally,
    TransportType,
)
from mcp_aggregator.registry.redaction import redact_connection_config, redact_url
from mcp_aggregator.registry.registry import Registry

__all__ = [
    "Limits",
    "Registry",
    "RegistrySettings",
    "ServerRecord",
    "ServerSource",
    "ServerSpec",
    "ToolPinRecord",
    "ToolRecord",
    "ToolSpec",
    "ToolTally",
    "TransportType",
    "check_server_limit",
    "check_session_limit",
    "check_tool_limits",
    "migrate",
    "redact_connection_config",
    "redact_url",
]
