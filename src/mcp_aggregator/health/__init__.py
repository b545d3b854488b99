"""Server lifecycle states, health checks and reconnection backoff."""

import typing

from mcp_aggregator.health.http_health_check import http_health_check
from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = [
    "HealthAction",
    "HealthMonitor",
    "HealthOutcome",
    "HealthResult",
    "HealthSettings",
    "HealthStore",
    "HealthUpdate",
    "MonitoredServer",
    "ServerEvent",
    "ServerStatus",
    "SystemClock",
    "apply_health_result",
    "backoff_delays",
    "can_disconnect",
    "can_discover",
    "can_execute",
    "http_health_check",
    "is_exposed",
    "retry_with_backoff",
    "transition",
]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "backoff_delays": ".backoff",
        "retry_with_backoff": ".backoff",
        "HealthSettings": ".config",
        "HealthMonitor": ".health_monitor",
        "HealthStore": ".health_monitor",
        "MonitoredServer": ".health_monitor",
        "SystemClock": ".health_monitor",
        "HealthAction": ".health_result",
        "HealthOutcome": ".health_result",
        "HealthResult": ".health_result",
        "HealthUpdate": ".health_result",
        "apply_health_result": ".health_result",
        "ServerEvent": ".server_state",
        "ServerStatus": ".server_state",
        "can_disconnect": ".server_state",
        "can_discover": ".server_state",
        "can_execute": ".server_state",
        "is_exposed": ".server_state",
        "transition": ".server_state",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.health.backoff import backoff_delays, retry_with_backoff
    from mcp_aggregator.health.config import HealthSettings
    from mcp_aggregator.health.health_monitor import HealthMonitor, HealthStore, MonitoredServer, SystemClock
    from mcp_aggregator.health.health_result import (
        HealthAction,
        HealthOutcome,
        HealthResult,
        HealthUpdate,
        apply_health_result,
    )
    from mcp_aggregator.health.http_health_check import http_health_check
    from mcp_aggregator.health.server_state import (
        ServerEvent,
        ServerStatus,
        can_disconnect,
        can_discover,
        can_execute,
        is_exposed,
        transition,
    )
