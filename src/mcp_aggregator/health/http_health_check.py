"""The HTTP health check of BR-006 / EC-005: GET the health URL, only 200 is healthy."""

from __future__ import annotations

import logging
import time

import httpx

from mcp_aggregator.health.health_result import HealthOutcome, HealthResult

logger = logging.getLogger(__name__)


async def http_health_check(
    url: str,
    timeout: float = 5.0,  # noqa: ASYNC109 - httpx's own per-request timeout, so a timeout is a result
    *,
    client: httpx.AsyncClient | None = None,
) -> HealthResult:
    """GET ``url`` and classify the answer.

    * 200 -> healthy;
    * 4xx -> ignored (a configuration problem, logged as a warning, not counted);
    * any other status, a timeout or a transport error (refused, reset, DNS) -> unhealthy.

    Redirects are followed; the final status decides. The error text never contains the
    URL (it may carry credentials). ``client`` lets the monitor reuse one connection pool;
    without it a client is made for this one check.
    """
    if client is None:
        async with httpx.AsyncClient() as own_client:
            return await _check(own_client, url, timeout)
    return await _check(client, url, timeout)


async def _check(client: httpx.AsyncClient, url: str, timeout_secs: float) -> HealthResult:
    started = time.perf_counter()
    try:
        response = await client.get(url, timeout=timeout_secs, follow_redirects=True)
    except httpx.TimeoutException:
        return HealthResult(HealthOutcome.UNHEALTHY, None, f"health check timed out after {timeout_secs:g}s")
    except httpx.InvalidURL as exc:
        return HealthResult(HealthOutcome.UNHEALTHY, None, f"invalid health check URL: {exc}")
    except httpx.TransportError as exc:
        return HealthResult(HealthOutcome.UNHEALTHY, None, f"health check failed: {type(exc).__name__}: {exc}")
    elapsed_ms = (time.perf_counter() - started) * 1000
    status = response.status_code
    if status == 200:
        return HealthResult(HealthOutcome.HEALTHY, elapsed_ms)
    if 400 <= status < 500:
        logger.warning("health check answered HTTP %d; not counted as a failure (check the URL)", status)
        return HealthResult(HealthOutcome.IGNORED, elapsed_ms, f"health check answered HTTP {status}")
    return HealthResult(HealthOutcome.UNHEALTHY, elapsed_ms, f"health check answered HTTP {status}")
