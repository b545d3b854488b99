"""The fast path in handshake-era (2025-11-25) sessions over streamable HTTP: a client gets
from it exactly what the full pipeline gives (results, log messages, cancellation), and
every session it may not serve (another credential's, a terminated one, a client that can
be asked mid-call, headers the transport refuses) gets the SDK's own answer."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp_types as types
import orjson
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import ServerConfig
from tests.held import held
from tests.serve.conformance_runner import fixture_stdio_config
from tests.serve.test_fast_path import CALLS, alpha_upstream, calls_through, http_gateway

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share the ``alpha`` gateways."""

DEADLINE = 30

Served = tuple[FastPath, str]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[dict[bool, Served]]:
    """``fast_path`` -> a gateway over the ``alpha`` stdio fixture with that setting, served over
    HTTP, for the tests that open sessions of their own and read the fast path's forwarded count
    as a difference; a test that needs the gateway's sessions to itself starts its own."""
    async with held(http_gateway(fast_path=True)) as fast, held(http_gateway(fast_path=False)) as full:
        yield {True: fast, False: full}


ACCEPT = "application/json, text/event-stream"
TOKENS = ("token-of-a-" + "x" * 30, "token-of-b-" + "y" * 30)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_handshake_era_session_gets_from_the_fast_path_what_the_full_pipeline_gives(transport: str) -> None:
    async with alpha_upstream(transport) as upstream:
        fast, forwarded = await calls_through(upstream, mode="legacy", fast_path=True)
        full, not_forwarded = await calls_through(upstream, mode="legacy", fast_path=False)
    assert fast == full
    assert (forwarded, not_forwarded) == (len(CALLS), 0)
    assert fast[1][2] == {"total": 42}
    assert fast[2][0] is True


async def logged(*, fast_path: bool, level: types.LoggingLevel | None) -> tuple[list[str], str, int]:
    """A handshake-era client calling a tool that logs three times at ``info``."""
    received: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(f"{params.level}:{params.data}")

    upstream = ServerConfig.model_validate(fixture_stdio_config())
    async with (
        http_gateway(upstream=upstream, fast_path=fast_path) as (fast, url),
        Client(url, mode="legacy", cache=None, logging_callback=on_log) as client,
    ):
        if level is not None:
            with pytest.warns(MCPDeprecationWarning):  # a handshake-era client still sends it
                await client.set_logging_level(level)
        await client.list_tools()
        result = await client.call_tool("conformance__test_tool_with_logging", {})
        text = result.content[0].text  # type: ignore[union-attr]
        return received, text, fast.forwarded


@pytest.mark.parametrize("level", [None, "warning"])
async def test_log_messages_come_on_an_event_stream_before_the_answer(level: types.LoggingLevel | None) -> None:
    fast, fast_text, forwarded = await logged(fast_path=True, level=level)
    full, full_text, _ = await logged(fast_path=False, level=level)
    assert (fast, fast_text) == (full, full_text)
    assert forwarded == 1
    every = ["info:Tool execution started", "info:Tool processing data", "info:Tool execution completed"]
    assert fast == ([] if level == "warning" else every)


async def test_a_client_that_can_be_asked_mid_call_is_served_by_the_full_pipeline(alpha: dict[bool, Served]) -> None:
    async def sampling(
        _ctx: ClientRequestContext, _params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        raise AssertionError("not asked here")

    fast, url = alpha[True]
    before = fast.forwarded
    async with Client(url, mode="legacy", cache=None, sampling_callback=sampling) as client:
        await client.list_tools()
        result = await client.call_tool("alpha__echo", {"text": "asked"})
        assert result.content[0].text == "asked"  # type: ignore[union-attr]
        assert fast.forwarded == before


async def test_a_cancelled_call_is_withdrawn_and_the_session_goes_on(alpha: dict[bool, Served]) -> None:
    fast, url = alpha[True]
    before = fast.forwarded
    async with Client(url, mode="legacy", cache=None) as client:
        await client.list_tools()
        gateway = fast.calls.gateway
        pending = lambda: gateway.connection("alpha").pending_requests  # noqa: E731
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "alpha__hang", {})
            await gateway.wait_until(lambda: pending() == 1, timeout_secs=DEADLINE)
            tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        await gateway.wait_until(lambda: pending() == 0, timeout_secs=DEADLINE)
        result = await client.call_tool("alpha__echo", {"text": "after"})
        assert result.content[0].text == "after"  # type: ignore[union-attr]
        assert fast.forwarded - before == 2


# -- the sessions it leaves to the SDK, seen on the wire -------------------------------------


class Session:
    """One handshake-era session driven with plain HTTP requests."""

    def __init__(self, http: httpx.AsyncClient, url: str, token: str | None = None) -> None:
        self.http, self.url = http, url
        self.headers = {"accept": ACCEPT, "content-type": "application/json"}
        if token is not None:
            self.headers["authorization"] = f"Bearer {token}"
        self.session_id = ""

    async def open(self) -> None:
        client = {"name": "t", "version": "1"}
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
        answer = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        self.session_id = answer.headers["mcp-session-id"]
        self.headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": "2025-11-25"}
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        assert "tools" in message(await self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))["result"]

    async def post(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        with anyio.fail_after(DEADLINE):
            return await self.http.post(self.url, content=orjson.dumps(body), headers=self.headers | headers)

    async def call(self, ident: int, text: str, **headers: str) -> httpx.Response:
        params = {"name": "alpha__echo", "arguments": {"text": text}}
        return await self.post({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}, **headers)


def message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a JSON or event-stream response."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        answer: dict[str, Any] = response.json()
        return answer
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    answers = [orjson.loads(d) for d in data if d and "id" in orjson.loads(d)]
    assert len(answers) == 1, response.text
    found: dict[str, Any] = answers[0]
    return found


@asynccontextmanager
async def raw_gateway(**serve: Any) -> AsyncIterator[tuple[FastPath, httpx.AsyncClient, str]]:
    async with http_gateway(fast_path=True, **serve) as (fast, url), httpx.AsyncClient() as http:
        yield fast, http, url


async def test_a_plain_call_gets_a_json_answer_with_the_session_id(alpha: dict[bool, Served]) -> None:
    fast, url = alpha[True]
    before = fast.forwarded
    async with httpx.AsyncClient() as http:
        session = Session(http, url)
        await session.open()
        answer = await session.call(2, "plain")
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["mcp-session-id"] == session.session_id
        assert message(answer)["result"]["content"][0]["text"] == "plain"
        assert fast.forwarded - before == 1


async def test_another_credential_gets_session_not_found_as_from_the_sdk() -> None:
    async with raw_gateway(mcp_tokens=list(TOKENS)) as (fast, http, url):
        owner = Session(http, url, TOKENS[0])
        await owner.open()
        intruder = Session(http, url, TOKENS[1])
        intruder.headers |= {"mcp-session-id": owner.session_id, "mcp-protocol-version": "2025-11-25"}
        refused = await intruder.call(2, "not yours")
        assert refused.status_code == 404
        assert "Session not found" in refused.text
        assert message(await owner.call(3, "mine"))["result"]["content"][0]["text"] == "mine"
        assert fast.forwarded == 1


async def test_a_terminated_session_gets_the_sdks_not_found(alpha: dict[bool, Served]) -> None:
    fast, url = alpha[True]
    before = fast.forwarded
    async with httpx.AsyncClient() as http:
        session = Session(http, url)
        await session.open()
        assert (await http.delete(url, headers=session.headers)).status_code == 200
        gone = await session.call(2, "late")
        assert gone.status_code == 404
        assert fast.forwarded == before


async def refusal(served: Served, headers: dict[str, str]) -> tuple[int, str, int]:
    """The refused call's status and body, and how many calls the fast path forwarded for it."""
    fast, url = served
    before = fast.forwarded
    async with httpx.AsyncClient() as http:
        session = Session(http, url)
        await session.open()
        refused = await session.call(2, "refused", **headers)
        forwarded = fast.forwarded - before
        assert message(await session.call(3, "fine"))["result"]["content"][0]["text"] == "fine"
        return refused.status_code, refused.text, forwarded


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({"accept": "application/json"}, True),
        ({"content-type": "text/plain"}, True),
        # Not the version the session agreed: the SDK decides (it serves this one).
        ({"mcp-protocol-version": "2025-06-18"}, False),
    ],
    ids=["no-event-stream-accepted", "not-json", "another-version"],
)
async def test_headers_the_transport_checks_get_its_answer(
    headers: dict[str, str], refused: bool, alpha: dict[bool, Served]
) -> None:
    fast = await refusal(alpha[True], headers)
    full = await refusal(alpha[False], headers)
    assert fast[:2] == full[:2]
    assert (fast[0] >= 400) is refused, fast
    assert fast[2] == 0


async def test_a_cancelled_call_gets_an_empty_stream_and_leaves_the_idle_timer_running() -> None:
    async with raw_gateway() as (fast, http, url):
        session = Session(http, url)
        await session.open()
        gateway = fast.calls.gateway
        pending = lambda: gateway.connection("alpha").pending_requests  # noqa: E731
        [transport] = fast.sessions._manager._server_instances.values()  # type: ignore[union-attr]
        answers: list[httpx.Response] = []

        async def hang() -> None:
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "alpha__hang"}}
            answers.append(await session.post(call))

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            await gateway.wait_until(lambda: pending() == 1, timeout_secs=DEADLINE)
            assert transport._requests_in_flight == 1, "the idle timer counts the fast call"
            assert transport.idle_scope.deadline == math.inf  # type: ignore[union-attr]
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
            assert (await session.post(cancel)).status_code == 202
        await gateway.wait_until(lambda: pending() == 0, timeout_secs=DEADLINE)
        [answer] = answers
        assert (answer.status_code, answer.headers["content-type"], answer.text) == (200, "text/event-stream", "")
        assert transport._requests_in_flight == 0
        assert transport.idle_scope.deadline < math.inf  # type: ignore[union-attr]
        assert fast.forwarded == 1
