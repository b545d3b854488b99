"""Server lifecycle states, health checks and reconnection backoff."""

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
