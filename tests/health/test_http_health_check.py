"""``http_health_check`` against real HTTP endpoints on 127.0.0.1 (BR-006, EC-005)."""

from __future__ import annotations

import logging

import httpx
import pytest

from mcp_aggregator.health import HealthOutcome, http_health_check

from .health_endpoints import closed_port_url, health_endpoints


async def test_200_is_healthy_with_a_response_time() -> None:
    async with health_endpoints() as base:
        result = await http_health_check(f"{base}/ok")

    assert result.outcome is HealthOutcome.HEALTHY
    assert result.response_time_ms is not None
    assert result.response_time_ms >= 0
    assert result.error is None


async def test_a_redirect_to_200_is_healthy() -> None:
    async with health_endpoints() as base:
        result = await http_health_check(f"{base}/moved")

    assert result.outcome is HealthOutcome.HEALTHY


async def test_500_is_a_failure() -> None:
    async with health_endpoints() as base:
        result = await http_health_check(f"{base}/fail")

    assert result.outcome is HealthOutcome.UNHEALTHY
    assert result.error == "health check answered HTTP 500"
    assert result.response_time_ms is not None


async def test_404_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    async with health_endpoints() as base:
        with caplog.at_level(logging.WARNING):
            result = await http_health_check(f"{base}/missing")

    assert result.outcome is HealthOutcome.IGNORED
    assert "HTTP 404" in caplog.text


async def test_a_hanging_endpoint_is_a_timeout_failure() -> None:
    async with health_endpoints() as base:
        result = await http_health_check(f"{base}/hang", timeout=0.2)

    assert result.outcome is HealthOutcome.UNHEALTHY
    assert result.error == "health check timed out after 0.2s"


async def test_a_refused_connection_is_a_failure() -> None:
    result = await http_health_check(await closed_port_url())

    assert result.outcome is HealthOutcome.UNHEALTHY
    assert result.error is not None
    assert result.error.startswith("health check failed: ConnectError")


async def test_an_invalid_url_is_a_failure() -> None:
    result = await http_health_check("http://[::1")

    assert result.outcome is HealthOutcome.UNHEALTHY
    assert result.error is not None
    assert result.error.startswith("invalid health check URL")


async def test_a_shared_client_is_used_and_left_open() -> None:
    async with health_endpoints() as base, httpx.AsyncClient() as client:
        first = await http_health_check(f"{base}/ok", client=client)
        second = await http_health_check(f"{base}/fail", client=client)
        assert not client.is_closed

    assert (first.outcome, second.outcome) == (HealthOutcome.HEALTHY, HealthOutcome.UNHEALTHY)
