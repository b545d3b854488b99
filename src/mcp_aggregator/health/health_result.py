"""Health check results and the pure rule that turns them into states (BR-006)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from mcp_aggregator.errors import IllegalTransitionError
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, transition


class HealthOutcome(Enum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    IGNORED = "ignored"
    """Not counted either way: a 4xx from the health URL is a configuration problem."""


@dataclass(frozen=True, slots=True)
class HealthResult:
    """One health check: its outcome, latency (ms, when measured) and error text."""

    outcome: HealthOutcome
    response_time_ms: float | None = None
    error: str | None = None

    @property
    def healthy(self) -> bool:
        return self.outcome is HealthOutcome.HEALTHY


class HealthAction(Enum):
    NONE = "none"
    WARN = "warn"
    """Log a warning: a failure that did not (yet) reach ERROR, or an ignored result."""
    RECONNECT = "reconnect"
    """The server moved to ERROR; schedule a reconnection."""


@dataclass(frozen=True, slots=True)
class HealthUpdate:
    status: ServerStatus
    consecutive_failures: int
    action: HealthAction


def apply_health_result(
    status: ServerStatus,
    consecutive_failures: int,
    result: HealthResult,
    *,
    degraded_after: int = 2,
    error_after: int = 3,
) -> HealthUpdate:
    """Fold one health result into a server's status and failure count.

    * success: failures reset to 0; DEGRADED recovers to CONNECTED;
    * ignored: nothing changes, a warning is due;
    * failure: the count grows; below ``degraded_after`` the status stays (warning), from
      ``degraded_after`` a CONNECTED server becomes DEGRADED, from ``error_after`` the
      server goes to ERROR and a reconnection is due.

    Raises:
        IllegalTransitionError: ``status`` is not CONNECTED or DEGRADED (only those are
            health-checked).
    """
    if status not in (ServerStatus.CONNECTED, ServerStatus.DEGRADED):
        raise IllegalTransitionError(status.value, f"health result {result.outcome.value}")
    if result.outcome is HealthOutcome.IGNORED:
        return HealthUpdate(status, consecutive_failures, HealthAction.WARN)
    if result.outcome is HealthOutcome.HEALTHY:
        new = transition(status, ServerEvent.HEALTH_OK) if status is ServerStatus.DEGRADED else status
        return HealthUpdate(new, 0, HealthAction.NONE)
    failures = consecutive_failures + 1
    if failures >= error_after:
        return HealthUpdate(transition(status, ServerEvent.HEALTH_ERROR), failures, HealthAction.RECONNECT)
    if failures >= degraded_after and status is ServerStatus.CONNECTED:
        return HealthUpdate(transition(status, ServerEvent.HEALTH_DEGRADED), failures, HealthAction.WARN)
    return HealthUpdate(status, failures, HealthAction.WARN)
