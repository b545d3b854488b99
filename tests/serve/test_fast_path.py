"""The passthrough fast path answers exactly what the full pipeline answers, and steps aside
whenever a call needs more than the answer (progress here; bad input in
tests/relay/test_bad_input_isolation.py, which runs with the fast path on).

The tests over plain ``alpha`` share its two gateways (fast path on, off) for the module, and
read what the fast path forwarded as a difference from before the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp_types as types
import orjson
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError
from starlette.routing import Route

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import ServerConfig
from tests.conftest import settings_for, start_http_upstream, stdio_fixture
from tests.held import held
from tests.http_serving import served_over_http
from tests.relay.test_mrtr_through_gateway import upstream


@asynccontextmanager
async def http_gateway(*, upstream: ServerConfig | None = None, **serve: Any) -> AsyncIterator[tuple[FastPath, str]]:
    settings = settings_for(upstream or stdio_fixture("alpha"), **serve)
    async with served_over_http(settings) as served:
        [fast] = [r.endpoint for r in served.app.routes if isinstance(r, Route) and r.path == "/mcp"]
        if not isinstance(fast, FastPath):
            fast = fast.app  # behind client authentication, when tokens are set
        assert isinstance(fast, FastPath)
        yield fast, served.mcp_url


pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share the ``alpha`` gateways."""

Served = tuple[FastPath, str]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[dict[bool, Served]]:
    """``fast_path`` -> a gateway over the ``alpha`` stdio fixture with that setting, served over HTTP."""
    async with held(http_gateway(fast_path=True)) as fast, held(http_gateway(fast_path=False)) as full:
        yield {True: fast, False: full}


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("alpha__echo", {"text": "héllo ✓"}),
    ("alpha__add", {"a": 2, "b": 40}),
    ("alpha__fail", {"message": "nope"}),
    ("alpha.api.v2.create", {"title": "dots"}),
    ("alpha__echo", {"text": 7}),
]


def summary(result: types.CallToolResult) -> tuple[Any, ...]:
    # _meta included: the serverInfo stamp must name the gateway on both paths, not the upstream.
    content = [b.model_dump(mode="json") for b in result.content]
    return (result.is_error, content, result.structured_content, result.meta)


async def calls_through(
    upstream: ServerConfig, *, mode: str = "auto", **serve: Any
) -> tuple[list[tuple[Any, ...]], int]:
    """``CALLS`` through the gateway by an SDK client; ``mode="legacy"``: a handshake-era one."""
    async with http_gateway(upstream=upstream, **serve) as served:
        return await calls_at(served, mode=mode)


async def calls_at(served: Served, *, mode: str = "auto") -> tuple[list[tuple[Any, ...]], int]:
    """``CALLS`` through a running gateway, and how many of them its fast path forwarded."""
    fast, url = served
    before = fast.forwarded
    async with Client(url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        if mode == "legacy":
            assert client.protocol_version == "2025-11-25"
            await client.list_tools()  # the gateway's server knows the session from here on
        results = [summary(await client.call_tool(name, args)) for name, args in CALLS]
    return results, fast.forwarded - before


@asynccontextmanager
async def alpha_upstream(transport: str) -> AsyncIterator[ServerConfig]:
    """The ``alpha`` fixture as a stdio upstream, or served over streamable HTTP."""
    if transport == "stdio":
        yield stdio_fixture("alpha")
        return
    web = start_http_upstream("http", name="alpha")
    try:
        yield ServerConfig(name="alpha", transport="http", base_url=web.mcp_url)  # type: ignore[arg-type]
    finally:
        web.stop()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_fast_path_answers_exactly_what_the_full_pipeline_answers(
    transport: str, alpha: dict[bool, Served]
) -> None:
    if transport == "stdio":
        fast, forwarded = await calls_at(alpha[True])
        full, not_forwarded = await calls_at(alpha[False])
    else:
        async with alpha_upstream(transport) as upstream:
            fast, forwarded = await calls_through(upstream, fast_path=True)
            full, not_forwarded = await calls_through(upstream, fast_path=False)
    assert fast == full
    assert forwarded == len(CALLS)
    assert not_forwarded == 0
    assert fast[1][2] == {"total": 42}
    assert fast[2][0] is True
    assert fast[0][3][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"


async def test_calls_that_need_more_than_the_answer_take_the_full_pipeline(alpha: dict[bool, Served]) -> None:
    steps: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    fast, url = alpha[True]
    before = fast.forwarded
    async with Client(url, mode="auto", cache=None) as client:
        result = await client.call_tool("alpha__progress", {"steps": 3}, progress_callback=on_progress)
        assert not result.is_error
        assert steps == [1, 2, 3]
        assert fast.forwarded - before == 0
        plain = await client.call_tool("alpha__echo", {"text": "plain"})
        assert not plain.is_error
        assert fast.forwarded - before == 1


@pytest.mark.parametrize("fast_path", [True, False])
async def test_a_result_over_max_result_bytes_fails_that_call_only(fast_path: bool) -> None:
    settings: dict[str, Any] = {"fast_path": fast_path, "max_result_bytes": 1 << 20}
    async with http_gateway(**settings) as (_, url), Client(url, mode="auto", cache=None) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("alpha__blob", {"size": 2 << 20})
        assert "exceeds serve.max_result_bytes (1048576)" in info.value.error.message
        small = await client.call_tool("alpha__blob", {"size": 1000})
        assert not small.is_error
        block = small.content[0]
        assert isinstance(block, types.TextContent) and len(block.text) == 1000


@pytest.mark.parametrize("fast_path", [True, False])
async def test_a_20_mb_result_comes_through_whole(fast_path: bool, alpha: dict[bool, Served]) -> None:
    async with Client(alpha[fast_path][1], mode="auto", cache=None) as client:
        result = await client.call_tool("alpha__blob", {"size": 20 << 20})
        block = result.content[0]
        assert isinstance(block, types.TextContent) and len(block.text) == 20 << 20


MODERN_META = {
    types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
    types.CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"},
    types.CLIENT_CAPABILITIES_META_KEY: {},
}
MODERN_HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "alpha__echo",
}


def echo_call(ident: int, text: str) -> dict[str, Any]:
    params = {"name": "alpha__echo", "arguments": {"text": text}, "_meta": MODERN_META}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


async def test_below_asgi_a_plain_call_is_answered_and_the_guards_still_hold(alpha: dict[bool, Served]) -> None:
    """The protocol-level fast path (``fast_http_protocol``) takes plain calls only when the
    Host/Origin guard would let them through; what it declines gets ASGI's answer."""
    fast, url = alpha[True]
    before = fast.forwarded
    async with httpx.AsyncClient() as http:
        answered = await http.post(url, json=echo_call(1, "raw"), headers=MODERN_HEADERS)
        assert answered.status_code == 200
        assert answered.headers["content-type"] == "application/json"
        assert answered.json()["result"]["content"][0]["text"] == "raw"
        assert answered.json()["result"]["_meta"][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"
        assert fast.forwarded - before == 1
        foreign = await http.post(url, json=echo_call(2, "x"), headers={**MODERN_HEADERS, "host": "evil.example"})
        assert foreign.status_code == 421
        cross = await http.post(
            url, json=echo_call(3, "x"), headers={**MODERN_HEADERS, "origin": "http://evil.example"}
        )
        assert cross.status_code == 403
        assert fast.forwarded - before == 1

        async def chunks() -> AsyncIterator[bytes]:
            yield orjson.dumps(echo_call(4, "chunked"))

        # No Content-Length: the protocol leaves it to ASGI, whose fast path still takes it.
        chunked = await http.post(url, content=chunks(), headers={**MODERN_HEADERS, "content-type": "application/json"})
        assert chunked.json()["result"]["content"][0]["text"] == "chunked"
        assert fast.forwarded - before == 2
        closing = await http.post(url, json=echo_call(5, "bye"), headers={**MODERN_HEADERS, "connection": "close"})
        assert closing.headers["connection"] == "close"
        assert closing.json()["id"] == 5
        # Many calls on one kept-alive connection, in order.
        for ident in range(6, 26):
            again = await http.post(url, json=echo_call(ident, str(ident)), headers=MODERN_HEADERS)
            assert again.json()["result"]["content"][0]["text"] == str(ident)
        assert fast.forwarded - before == 23


async def test_a_broken_answer_from_an_upstream_fails_that_call_only_over_http() -> None:
    garbled = upstream("garbled", "tests.upstream.garbled_server")
    async with http_gateway(upstream=garbled, fast_path=True) as (fast, url), Client(url, cache=None) as client:
        assert (await client.call_tool("garbled__echo", {"text": "before"})).content[0].text == "before"  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="garbled: answered with a line that is not JSON"):
            await client.call_tool("garbled__garble", {})
        assert (await client.call_tool("garbled__echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]
        assert fast.forwarded == 3


async def test_a_handshake_era_upstream_answers_a_modern_client_as_the_full_pipeline_does() -> None:
    """A 2025-11-25 stdio upstream's result lacks ``resultType``: the fast path shapes it for
    the 2026-07-28 client, as the SDK's server does on the full pipeline."""
    garbled = upstream("garbled", "tests.upstream.garbled_server")
    seen = {}
    for fast_path in (True, False):
        async with (
            http_gateway(upstream=garbled, fast_path=fast_path) as (fast, url),
            Client(url, cache=None) as client,
        ):
            result = await client.call_tool("garbled__echo", {"text": "héllo ✓"})
            seen[fast_path] = summary(result), fast.forwarded
    assert seen[True][0] == seen[False][0]
    assert (seen[True][1], seen[False][1]) == (1, 0)
    assert seen[True][0][3][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"
