"""Exponential backoff between connection attempts (EC-001: 1, 2, 4, 8 s; 5 attempts)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp_aggregator.errors import UpstreamError

T = TypeVar("T")

Sleeper = Callable[[float], Awaitable[None]]

logger = logging.getLogger(__name__)


def backoff_delays(max_attempts: int = 5, base: float = 1.0) -> list[float]:
    """Delays to wait between ``max_attempts`` attempts: ``base * 2**i`` for each gap.

    ``backoff_delays(5, 1.0) == [1.0, 2.0, 4.0, 8.0]``; one attempt needs no delay.

    Raises:
        ValueError: ``max_attempts < 1`` or ``base < 0``.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    if base < 0:
        raise ValueError(f"base must not be negative, got {base}")
    return [base * 2**i for i in range(max_attempts - 1)]


async def retry_with_backoff(
    connect: Callable[[], Awaitable[T]],
    sleeper: Sleeper,
    *,
    max_attempts: int = 5,
    base: float = 1.0,
    retry_on: tuple[type[Exception], ...] = (UpstreamError,),
) -> T:
    """Call ``connect`` until it succeeds, sleeping ``backoff_delays(...)`` between attempts.

    Only exceptions in ``retry_on`` are retried; any other propagates at once. After the
    last attempt fails, its exception propagates. ``sleeper`` is injected (``anyio.sleep``
    in production, a fake in tests).
    """
    delays = backoff_delays(max_attempts, base)
    for attempt, delay in enumerate(delays, start=1):
        try:
            return await connect()
        except retry_on as exc:
            logger.warning("attempt %d of %d failed: %s; retrying in %.1fs", attempt, max_attempts, exc, delay)
        await sleeper(delay)
    return await connect()
