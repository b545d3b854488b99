"""Calls the passthrough fast path answers count in the live series like any other, with the
audit on and off (off, the fast path makes no ``Invocation`` per call for the series' sake)."""

from __future__ import annotations

import pytest
from mcp import Client
from starlette.routing import Route

from mcp_aggregator.serve.fast_path import FastPath
from tests.conftest import settings_for, stdio_fixture
from tests.http_serving import served_over_http


@pytest.mark.parametrize("audit", [True, False])
async def test_fast_path_calls_are_counted_per_server_and_tool_with_their_latency(audit: bool) -> None:
    settings = settings_for(stdio_fixture("alpha"), sections={"audit": {"enabled": audit}})
    async with served_over_http(settings) as served, Client(served.mcp_url, cache=None) as client:
        [fast] = [r.endpoint for r in served.app.routes if isinstance(r, Route) and r.path == "/mcp"]
        while not isinstance(fast, FastPath):
            fast = fast.app  # behind the ASGI wrappers of the face
        assert served.gateway.pipeline.per_call is audit
        for text in ("one", "two"):
            await client.call_tool("alpha__echo", {"text": text})
        await client.call_tool("alpha__fail", {"message": "nope"})
        assert fast.forwarded == 3
        snap = served.gateway.series.snapshot(1, server="alpha")
    assert snap["tools"]["echo"]["calls"] == [2]
    assert snap["tools"]["fail"]["errors"] == [1]
    assert snap["servers"]["alpha"]["p50_ms"][0] > 0
