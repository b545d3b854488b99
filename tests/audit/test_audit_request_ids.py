"""A call's HTTP request id (``X-Request-Id``) is the same in the response header, its audit
entry (found by it over real HTTP) and the log lines written while it ran: the client's
own id when it sends one, else the random one the gateway made. On every path a call
over HTTP takes: the fast path below ASGI, the SDK's endpoint, a handshake-era session."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.logs import JsonLogFormatter
from tests.audit.test_audit_through_gateway import DEADLINE, TOKEN, audit_items, fast_path_of
from tests.conftest import settings_for
from tests.http_serving import served_over_http
from tests.relay.test_mrtr_through_gateway import upstream

# (client mode, serve.fast_path, calls the fast path answers out of two)
PATHS = {
    "fast path below ASGI": ("auto", True, 2),
    "SDK endpoint": ("auto", False, 0),
    "handshake-era session": ("legacy", True, 2),
}


class JsonLines(logging.Handler):
    """The gateway's warnings as ``--log-format json`` writes them (formatted as they are
    emitted: the context they read is the call's)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(JsonLogFormatter())
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@contextmanager
def json_lines() -> Iterator[JsonLines]:
    handler = JsonLines()
    logger = logging.getLogger("mcp_aggregator")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


class CallIds:
    """The ``X-Request-Id`` of each ``tools/call`` response the client got."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, response: httpx2.Response) -> None:
        if b'"tools/call"' in response.request.content:
            self.seen.append(response.headers["x-request-id"])


async def echo_then_refuse(url: str, mode: str, ids: CallIds, **headers: str) -> None:
    http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [ids]})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:  # type: ignore[arg-type]
        if mode == "legacy":
            await client.list_tools()  # the gateway's server knows the session from here on
        await client.call_tool("garbled__echo", {"text": "hi"})
        with pytest.raises(MCPError, match="no"):
            await client.call_tool("garbled__refuse", {"message": "no"})


@pytest.mark.parametrize("path", PATHS)
async def test_the_request_id_is_the_same_in_the_response_the_audit_and_the_log(path: str) -> None:
    mode, fast_path, taken = PATHS[path]
    settings = settings_for(upstream("garbled", "tests.upstream.garbled_server"), fast_path=fast_path)
    async with served_over_http(settings, admin_token=TOKEN) as served:
        fast, audit = fast_path_of(served.app), served.gateway.audit
        assert audit is not None
        given, made = CallIds(), CallIds()
        with json_lines() as logged:
            await echo_then_refuse(served.mcp_url, mode, given, **{"X-Request-Id": "abc-123"})
            await echo_then_refuse(served.mcp_url, mode, made)
        assert fast.forwarded == 2 * taken
        with anyio.fail_after(DEADLINE):
            await audit.flush()
        mine = (await audit_items(served.base, request_id="abc-123"))["items"]
        [random_echo, random_refusal] = made.seen
        random = (await audit_items(served.base, request_id=random_echo))["items"]

    assert given.seen == ["abc-123", "abc-123"]
    assert [(i["tool"], i["outcome"], i["request_id"]) for i in mine] == [
        ("refuse", "error", "abc-123"),
        ("echo", "ok", "abc-123"),
    ]
    assert all(i["jsonrpc_id"] for i in mine), "the JSON-RPC id is kept beside it"
    assert len(random_echo) == 16 and random_echo != random_refusal
    assert [(i["tool"], i["request_id"]) for i in random] == [("echo", random_echo)]
    failures = [line for line in logged.lines if "refuse failed" in line["message"]]
    assert [line["request_id"] for line in failures] == ["abc-123", random_refusal]
