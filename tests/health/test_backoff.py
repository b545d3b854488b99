"""EC-001 backoff: 1, 2, 4, 8 s between five attempts, driven by a fake sleeper."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import UpstreamConnectError
from mcp_aggregator.health import backoff_delays, retry_with_backoff


class FakeSleeper:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)


class FlakyConnect:
    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.error = error or UpstreamConnectError("git", "refused")

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "session"


@pytest.mark.parametrize(
    ("attempts", "base", "delays"),
    [(5, 1.0, [1, 2, 4, 8]), (3, 1.0, [1, 2]), (4, 0.5, [0.5, 1, 2]), (1, 1.0, []), (2, 0.0, [0])],
)
def test_backoff_delays_double_from_the_base(attempts: int, base: float, delays: list[float]) -> None:
    assert backoff_delays(attempts, base) == delays


def test_default_backoff_is_the_contracts_schedule() -> None:
    assert backoff_delays() == [1.0, 2.0, 4.0, 8.0]


@pytest.mark.parametrize(("attempts", "base"), [(0, 1.0), (5, -1.0)])
def test_nonsense_backoff_settings_are_refused(attempts: int, base: float) -> None:
    with pytest.raises(ValueError):
        backoff_delays(attempts, base)


async def test_retry_sleeps_between_failures_and_returns_the_first_success() -> None:
    sleeper, connect = FakeSleeper(), FlakyConnect(failures=2)

    assert await retry_with_backoff(connect, sleeper) == "session"
    assert connect.calls == 3
    assert sleeper.slept == [1.0, 2.0]


async def test_retry_gives_up_after_the_last_attempt_with_its_error() -> None:
    sleeper, connect = FakeSleeper(), FlakyConnect(failures=99)

    with pytest.raises(UpstreamConnectError, match="refused"):
        await retry_with_backoff(connect, sleeper, max_attempts=5, base=1.0)
    assert connect.calls == 5
    assert sleeper.slept == [1.0, 2.0, 4.0, 8.0]


async def test_errors_not_listed_as_retryable_propagate_at_once() -> None:
    sleeper, connect = FakeSleeper(), FlakyConnect(failures=1, error=KeyError("bug"))

    with pytest.raises(KeyError):
        await retry_with_backoff(connect, sleeper)
    assert connect.calls == 1
    assert sleeper.slept == []
