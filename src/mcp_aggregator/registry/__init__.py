"""The registry: servers and tools persisted in SQLite or PostgreSQL (schema ``mcp``)."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "RegistrySettings": ".config",
        "migrate": ".engine",
        "Limits": ".limits",
        "check_server_limit": ".limits",
        "check_session_limit": ".limits",
        "check_tool_limits": ".limits",
        "ServerRecord": ".records",
        "ServerSource": ".records",
        "ServerSpec": ".records",
        "ToolPinRecord": ".records",
        "ToolRecord": ".records",
        "ToolSpec": ".records",
        "ToolTally": ".records",
        "TransportType": ".records",
        "redact_connection_config": ".redaction",
        "redact_url": ".redaction",
        "Registry": ".registry",
    },
)

if typing.TYPE_CHECKING:
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
