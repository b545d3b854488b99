"""The pure limit checks and their defaults (seed 003 "Resource Limits")."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import LimitExceededError
from mcp_aggregator.registry import Limits, check_server_limit, check_session_limit, check_tool_limits


def test_default_limits_are_the_contracts() -> None:
    assert Limits() == Limits(
        max_servers=50, max_tools_per_server=1000, max_total_tools=10_000, max_concurrent_sessions=50
    )


@pytest.mark.parametrize(("count", "refused"), [(49, False), (50, False), (51, True)])
def test_server_limit_allows_up_to_fifty(count: int, refused: bool) -> None:
    if refused:
        with pytest.raises(LimitExceededError, match="at most 50 servers"):
            check_server_limit(Limits(), count)
    else:
        check_server_limit(Limits(), count)


@pytest.mark.parametrize(
    ("tool_count", "others", "message"),
    [
        (1000, 0, None),
        (1001, 0, "at most 1000 tools per server"),
        (1000, 9000, None),
        (1000, 9001, "at most 10000 tools are allowed in all"),
        (0, 10_000, None),
        (1, 10_000, "10001 in all"),
    ],
)
def test_tool_limits_refuse_past_either_ceiling(tool_count: int, others: int, message: str | None) -> None:
    if message is None:
        check_tool_limits(Limits(), "git", tool_count, others)
    else:
        with pytest.raises(LimitExceededError, match=message):
            check_tool_limits(Limits(), "git", tool_count, others)


def test_session_limit_allows_up_to_fifty() -> None:
    check_session_limit(Limits(), 50)
    with pytest.raises(LimitExceededError, match="at most 50 concurrent sessions"):
        check_session_limit(Limits(), 51)
