"""``apply_health_result``: BR-006 as a table."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import IllegalTransitionError
from mcp_aggregator.health import (
    HealthAction,
    HealthOutcome,
    HealthResult,
    HealthUpdate,
    ServerStatus,
    apply_health_result,
)

S = ServerStatus
OK = HealthResult(HealthOutcome.HEALTHY, 3.0)
FAIL = HealthResult(HealthOutcome.UNHEALTHY, None, "HTTP 500")
IGNORED = HealthResult(HealthOutcome.IGNORED, 2.0, "HTTP 404")


@pytest.mark.parametrize(
    ("status", "failures", "result", "expected"),
    [
        (S.CONNECTED, 0, FAIL, HealthUpdate(S.CONNECTED, 1, HealthAction.WARN)),
        (S.CONNECTED, 1, FAIL, HealthUpdate(S.DEGRADED, 2, HealthAction.WARN)),
        (S.DEGRADED, 2, FAIL, HealthUpdate(S.ERROR, 3, HealthAction.RECONNECT)),
        (S.CONNECTED, 2, FAIL, HealthUpdate(S.ERROR, 3, HealthAction.RECONNECT)),
        (S.DEGRADED, 1, FAIL, HealthUpdate(S.DEGRADED, 2, HealthAction.WARN)),
        (S.DEGRADED, 2, OK, HealthUpdate(S.CONNECTED, 0, HealthAction.NONE)),
        (S.CONNECTED, 1, OK, HealthUpdate(S.CONNECTED, 0, HealthAction.NONE)),
        (S.CONNECTED, 1, IGNORED, HealthUpdate(S.CONNECTED, 1, HealthAction.WARN)),
        (S.DEGRADED, 2, IGNORED, HealthUpdate(S.DEGRADED, 2, HealthAction.WARN)),
    ],
)
def test_health_results_fold_into_status_failures_and_action(
    status: ServerStatus, failures: int, result: HealthResult, expected: HealthUpdate
) -> None:
    assert apply_health_result(status, failures, result) == expected


def test_thresholds_are_configurable() -> None:
    assert apply_health_result(S.CONNECTED, 1, FAIL, degraded_after=3, error_after=5).status is S.CONNECTED
    assert apply_health_result(S.CONNECTED, 3, FAIL, degraded_after=3, error_after=5).status is S.DEGRADED


@pytest.mark.parametrize("status", [S.DISCONNECTED, S.CONNECTING, S.ERROR])
def test_only_connected_or_degraded_servers_take_health_results(status: ServerStatus) -> None:
    with pytest.raises(IllegalTransitionError):
        apply_health_result(status, 0, OK)


def test_healthy_is_only_the_healthy_outcome() -> None:
    assert OK.healthy
    assert not FAIL.healthy
    assert not IGNORED.healthy
