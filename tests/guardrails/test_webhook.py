"""A webhook rule asks the operator's service, which allows, denies or rewrites; a service
that cannot be reached follows the rule's failure policy."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.admin.conftest import served_app
from tests.guardrails.conftest import guarded_settings
from tests.http_serving import served_over_http


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@asynccontextmanager
async def verdict_service() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A service that denies ``deny me``, rewrites ``rewrite me`` on its way out and results
    saying ``swap me`` on their way back, and allows the rest; it keeps what it was sent."""
    seen: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/verdict")
    async def verdict(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        if body["where"] == "arguments":
            text = body["arguments"].get("text")
            if text == "deny me":
                return {"decision": "deny", "reason": "not today"}
            if text == "rewrite me":
                return {"decision": "replace", "arguments": {"text": "swap me"}}
            return {"decision": "allow"}
        said = body["result"]["content"][0]["text"]
        if said == "swap me":
            swapped = {"content": [{"type": "text", "text": "swapped"}], "structuredContent": {"result": "swapped"}}
            return {"decision": "replace", "result": swapped}
        return {"decision": "allow"}

    async with served_app(app) as base:
        yield f"{base}/verdict", seen


def hook(url: str, **extra: Any) -> dict[str, Any]:
    return {"name": "hook", "kind": "webhook", "url": url, "on": ["arguments", "results"], "tools": ["echo"], **extra}


async def test_the_service_allows_denies_and_rewrites_calls_and_results() -> None:
    async with verdict_service() as (url, seen):
        settings = guarded_settings([hook(url, action="block")])
        async with served_over_http(settings) as served, Client(served.mcp_url, mode="auto", cache=None) as client:
            plain = await client.call_tool("leaky__echo", {"text": "hello"})
            assert text_of(plain) == "hello"
            with pytest.raises(MCPError) as denied:
                await client.call_tool("leaky__echo", {"text": "deny me"})
            assert "guardrail 'hook' (webhook)" in denied.value.error.message
            assert "not today" in denied.value.error.message
            rewritten = await client.call_tool("leaky__echo", {"text": "rewrite me"})
            # The upstream got "swap me" from the rewrite; its answer was swapped on the way back.
            assert text_of(rewritten) == "swapped"
            untouched = await client.call_tool("leaky__weather", {"city": "Oslo"})
            assert text_of(untouched).startswith("Oslo")
    first = seen[0]
    assert (first["rule"], first["where"], first["server"], first["tool"]) == ("hook", "arguments", "leaky", "echo")
    assert first["arguments"] == {"text": "hello"} and first["profile"] == "default"
    assert {body["tool"] for body in seen} == {"echo"}


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (the port was bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/verdict"


async def test_a_service_that_is_down_fails_a_block_rule_closed_and_a_flag_rule_open() -> None:
    url = closed_port_url()
    settings = guarded_settings([hook(url, action="block"), {**hook(url, action="flag"), "name": "watch"}])
    async with served_over_http(settings) as served, Client(served.mcp_url, mode="auto", cache=None) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("leaky__echo", {"text": "hello"})
        assert "guardrail 'hook' (webhook) found unreachable" in refused.value.error.message
        counts = served.gateway.guard.counts
        assert counts[("hook", "block", "webhook", "arguments")] == 1


async def test_an_open_failure_policy_lets_the_call_pass_and_records_it() -> None:
    settings = guarded_settings([hook(closed_port_url(), action="block", failure="open")])
    async with served_over_http(settings) as served, Client(served.mcp_url, mode="auto", cache=None) as client:
        result = await client.call_tool("leaky__echo", {"text": "hello"})
        assert text_of(result) == "hello"
        counts = served.gateway.guard.counts
        assert counts[("hook", "flag", "webhook", "arguments")] == 1
        assert counts[("hook", "flag", "webhook", "results")] == 1


@asynccontextmanager
async def silent_service() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A service that takes each request and answers none until the block ends."""
    asked: list[dict[str, Any]] = []
    released = anyio.Event()
    app = FastAPI()

    @app.post("/verdict")
    async def verdict(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        await released.wait()
        return {"decision": "allow"}

    async with served_app(app) as base:
        try:
            yield f"{base}/verdict", asked
        finally:
            released.set()  # so the server can shut down: nothing is left waiting


async def test_a_service_that_does_not_answer_in_time_follows_the_failure_policy() -> None:
    async with silent_service() as (url, asked):
        block = hook(url, action="block", timeout_secs=0.2, on=["arguments"])
        flag = {**hook(url, action="flag", timeout_secs=0.2), "name": "watch", "tools": ["weather"]}
        settings = guarded_settings([block, flag])
        async with served_over_http(settings) as served, Client(served.mcp_url, mode="auto", cache=None) as client:
            with anyio.fail_after(20):  # far above both timeouts: a hook without one would hang here
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("leaky__echo", {"text": "hello"})
                passed = await client.call_tool("leaky__weather", {"city": "Oslo"})
            message = refused.value.error.message
            assert "guardrail 'hook' (webhook) found unreachable" in message and "Timeout" in message
            assert text_of(passed).startswith("Oslo: sunny"), "open for a flag rule: the call went through"
            assert [(body["rule"], body["where"]) for body in asked] == [
                ("hook", "arguments"),
                ("watch", "arguments"),
                ("watch", "results"),
            ]
            counts = served.gateway.guard.counts
            assert counts[("hook", "block", "webhook", "arguments")] == 1
            assert counts[("watch", "flag", "webhook", "arguments")] == 1
            assert counts[("watch", "flag", "webhook", "results")] == 1
            assert ("hook", "mask", "webhook", "arguments") not in counts
