"""A handshake-era client that set ``logging/setLevel`` gets only the lines at its level or
above from a 2025-11-25 upstream that logs at every level, on the fast path and the full
pipeline alike; a client that set none gets every line."""

from __future__ import annotations

import sys

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_aggregator.settings import ServerConfig
from tests.conftest import REPO
from tests.serve.test_fast_path import http_gateway
from tests.upstream.leveled_log_server import LEVELS


def leveled_upstream() -> ServerConfig:
    return ServerConfig.model_validate(
        {
            "name": "leveled",
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "tests.upstream.leveled_log_server"],
            "cwd": str(REPO),
            "protocol": "legacy",
        }
    )


async def lines_logged(*, fast_path: bool, level: types.LoggingLevel | None) -> tuple[list[str], int]:
    received: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params.level)

    async with (
        http_gateway(upstream=leveled_upstream(), fast_path=fast_path) as (fast, url),
        Client(url, mode="legacy", cache=None, logging_callback=on_log) as client,
    ):
        if level is not None:
            with pytest.warns(MCPDeprecationWarning):  # a handshake-era client still sends it
                await client.set_logging_level(level)
        await client.list_tools()
        result = await client.call_tool("leveled__chatter", {})
        assert not result.is_error
        return received, fast.forwarded


@pytest.mark.parametrize(("level", "expected"), [(None, list(LEVELS)), ("warning", ["warning", "error"])])
async def test_a_client_gets_the_upstreams_lines_at_its_own_level_on_both_paths(
    level: types.LoggingLevel | None, expected: list[str]
) -> None:
    fast, forwarded = await lines_logged(fast_path=True, level=level)
    full, _ = await lines_logged(fast_path=False, level=level)
    assert fast == full == expected
    assert forwarded == 1, "the fast path answered the call"
