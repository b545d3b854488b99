"""The stdio face: its fast path answers what the full pipeline answers, steps aside for
what needs more, honours cancellation, and one bad line harms nobody else's calls.

The face runs in-process over two OS pipes (the real ``stdio_streams`` claims fds 0 and 1,
which a test process cannot give up; ``test_stdio_endpoint.py`` runs it for real in a
subprocess), with the SDK server behind it as in ``serve --transport stdio``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
import pytest_asyncio

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.fast_call import FastCalls
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.stdio_face import pipe_streams
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import ServerConfig
from tests.conftest import settings_for, stdio_fixture
from tests.held import held
from tests.relay.test_mrtr_through_gateway import upstream
from tests.serve.conformance_runner import fixture_http_config, fixture_http_server, fixture_stdio_config
from tests.serve.test_fast_path import CALLS as HTTP_CALLS

DEADLINE = 30
MODERN_META = {
    types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
    types.CLIENT_INFO_META_KEY: {"name": "test", "version": "1"},
    types.CLIENT_CAPABILITIES_META_KEY: {},
}


@dataclass
class Face:
    gateway: Gateway
    calls: FastCalls
    writer: asyncio.StreamWriter
    reader: asyncio.StreamReader

    async def send(self, message: dict[str, Any] | bytes) -> None:
        self.writer.write(message if isinstance(message, bytes) else orjson.dumps(message) + b"\n")
        await self.writer.drain()

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(DEADLINE):
            line = await self.reader.readline()
        assert line, "the face closed its output"
        answer: dict[str, Any] = orjson.loads(line)
        return answer

    async def call(self, ident: Any, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
        await self.send(tool_call(ident, name, arguments, **meta))
        return await self.receive()

    async def one_by_one(self, messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each message's answer, each sent once the one before it is answered."""
        answers = []
        for message in messages:
            await self.send(message)
            answers.append(await self.receive())
        return answers


def tool_call(ident: Any, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {**MODERN_META, **meta}}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share the ``alpha`` gateways."""

Gateways = dict[bool, Gateway]
"""``fast_path`` -> a settled gateway with that setting."""


@asynccontextmanager
async def settled(*upstreams: ServerConfig, fast_path: bool = True) -> AsyncIterator[Gateway]:
    async with Gateway(settings_for(*upstreams, fast_path=fast_path)) as gateway:
        await gateway.wait_settled(DEADLINE)
        yield gateway


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def alpha() -> AsyncIterator[Gateways]:
    """Two gateways over the ``alpha`` fixture upstream, the fast path on and off, shared by the
    module's tests (each gateway start costs a stdio upstream process and over a second of CPU).
    Each test still gets a face of its own (its pipes, SDK server and fast-path counts); none
    leaves a call in flight."""
    async with (
        held(settled(stdio_fixture("alpha"), fast_path=True)) as fast,
        held(settled(stdio_fixture("alpha"), fast_path=False)) as full,
    ):
        yield {True: fast, False: full}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def conformance() -> AsyncIterator[Gateways]:
    """Two gateways over the conformance fixture upstream, shared as ``alpha``'s are. The
    gateway reaches it at 2026-07-28, where a client's log level rides each request and never
    reaches the upstream as ``logging/setLevel``: a level one test sets does not outlive its face."""
    async with (
        held(settled(conformance_upstream(), fast_path=True)) as fast,
        held(settled(conformance_upstream(), fast_path=False)) as full,
    ):
        assert fast.connection("conformance").modern and full.connection("conformance").modern, "sharing needs it"
        yield {True: fast, False: full}


@asynccontextmanager
async def stdio_face(gateway: Gateway) -> AsyncIterator[Face]:
    """A stdio face of its own in front of ``gateway``."""
    to_face_r, to_face_w = os.pipe()
    from_face_r, from_face_w = os.pipe()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_face_r, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(to_face_w, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    gateway_server = GatewayServer(gateway, build_surface(gateway))
    server = gateway_server.server
    calls = FastCalls(gateway, server.server_info_stamp)
    stdin, stdout = os.fdopen(to_face_r, "rb", 0), os.fdopen(from_face_w, "wb", 0)
    async with anyio.create_task_group() as tg:
        await tg.start(gateway_server.run)
        async with calls.serving(), pipe_streams(calls, stdin, stdout) as (read_stream, write_stream):
            tg.start_soon(server.run, read_stream, write_stream, server.create_initialization_options())
            try:
                yield Face(gateway, calls, writer, reader)
            finally:
                writer.close()
        tg.cancel_scope.cancel()


@asynccontextmanager
async def own_stdio_face(*upstreams: ServerConfig, fast_path: bool = True) -> AsyncIterator[Face]:
    """A face in front of a gateway of its own, for an upstream that only one test uses."""
    async with settled(*upstreams, fast_path=fast_path) as gateway, stdio_face(gateway) as face:
        yield face


def conformance_upstream() -> ServerConfig:
    return ServerConfig.model_validate(fixture_stdio_config())


# The HTTP fast path's calls, and one to an unknown tool (the full pipeline answers it).
CALLS: list[tuple[str, dict[str, Any]]] = [*HTTP_CALLS, ("alpha__nope", {})]


async def answers(gateway: Gateway) -> tuple[list[dict[str, Any]], int]:
    async with stdio_face(gateway) as face:
        got = [await face.call(i, name, args) for i, (name, args) in enumerate(CALLS)]
        return got, face.calls.forwarded


async def test_the_fast_path_answers_exactly_what_the_full_pipeline_answers(alpha: Gateways) -> None:
    fast, forwarded = await answers(alpha[True])
    full, not_forwarded = await answers(alpha[False])
    assert fast == full
    assert (forwarded, not_forwarded) == (len(CALLS) - 1, 0)  # the unknown tool goes the full way
    assert fast[1]["result"]["structuredContent"] == {"total": 42}
    assert fast[2]["result"]["isError"] is True
    assert fast[0]["result"]["_meta"][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"
    assert "error" in fast[5]


async def test_calls_that_need_more_than_the_answer_take_the_full_pipeline(alpha: Gateways) -> None:
    async with stdio_face(alpha[True]) as face:
        progress = await face.call(1, "alpha__progress", {"steps": 2}, progressToken="p1")
        notes = []
        while "id" not in progress:  # progress notifications come first
            notes.append(progress)
            progress = await face.receive()
        assert [n["params"]["progress"] for n in notes] == [1, 2]
        asking = {types.CLIENT_CAPABILITIES_META_KEY: {"sampling": {}}}
        sampled = await face.call(2, "alpha__echo", {"text": "x"}, **asking)
        assert sampled["result"]["content"][0]["text"] == "x"
        assert face.calls.forwarded == 0
        plain = await face.call(3, "alpha__echo", {"text": "plain"})
        assert plain["result"]["content"][0]["text"] == "plain"
        assert face.calls.forwarded == 1


@pytest.mark.parametrize("asking", ["sampling", "elicitation", "roots"])
async def test_a_handshake_era_client_that_can_be_asked_is_served_by_the_sdk_behind_the_face(
    asking: str, alpha: Gateways
) -> None:
    async with stdio_face(alpha[True]) as face:
        assert (await handshake(face, {asking: {}}))["result"]["protocolVersion"] == "2025-11-25"
        await face.send(legacy_call(2, "alpha__echo", {"text": "old"}))
        assert (await face.receive())["result"]["content"][0]["text"] == "old"
        assert face.calls.forwarded == 0


async def logged_call(
    face_of: AbstractAsyncContextManager[Face], level: str | None
) -> tuple[list[dict[str, Any]], int]:
    """A handshake-era client (with ``level`` set, if any) calling a tool that logs at ``info``:
    every message it receives up to the answer."""
    async with face_of as face:
        await handshake(face, {})
        if level is not None:
            await face.send({"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel", "params": {"level": level}})
            assert (await face.receive())["id"] == "lvl"
        await face.send(legacy_call(1, "conformance__test_tool_with_logging", {}))
        received = [await face.receive()]
        while "id" not in received[-1]:
            received.append(await face.receive())
        return received, face.calls.forwarded


@pytest.mark.parametrize("level", [None, "info", "warning"])
async def test_a_handshake_era_client_gets_the_upstreams_log_messages_on_the_fast_path_too(
    level: str | None, conformance: Gateways
) -> None:
    fast, forwarded = await logged_call(stdio_face(conformance[True]), level)
    full, _ = await logged_call(stdio_face(conformance[False]), level)
    assert fast == full
    assert forwarded == 1
    logs = [m["params"]["data"] for m in fast if m.get("method") == "notifications/message"]
    # The tool logs three times at info: a client that set no level gets every level.
    every = ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert logs == ([] if level == "warning" else every)
    assert fast[-1]["result"]["content"][0]["text"] == "Tool with logging executed successfully"


async def test_a_level_set_in_the_same_write_as_a_call_holds_for_that_call(conformance: Gateways) -> None:
    """Lines are taken in order: the call waits behind the ``logging/setLevel`` the SDK
    server takes first, and is still fast when its turn comes, with the new level."""
    async with stdio_face(conformance[True]) as face:
        await handshake(face, {})
        await face.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        assert (await face.receive())["id"] == "ping"  # the handshake is over: nothing waits
        level = {"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel", "params": {"level": "warning"}}
        call = legacy_call(1, "conformance__test_tool_with_logging", {})
        await face.send(orjson.dumps(level) + b"\n" + orjson.dumps(call) + b"\n")
        received = [await face.receive(), await face.receive()]
        assert sorted(str(m.get("id")) for m in received) == ["1", "lvl"], "no log message below warning"
        assert face.calls.forwarded == 1


async def test_log_messages_from_an_http_upstream_event_stream_reach_a_handshake_era_client() -> None:
    async with fixture_http_server() as url:
        upstream = ServerConfig.model_validate(fixture_http_config(url))
        fast, forwarded = await logged_call(own_stdio_face(upstream, fast_path=True), None)
        full, _ = await logged_call(own_stdio_face(upstream, fast_path=False), None)
    assert fast == full
    assert forwarded == 1
    assert [m.get("method") for m in fast] == ["notifications/message"] * 3 + [None]


async def test_a_call_before_the_handshake_ends_is_served_by_the_sdk(alpha: Gateways) -> None:
    async with stdio_face(alpha[True]) as face:
        init_params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await face.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init_params})
        await face.receive()
        await face.send(legacy_call(1, "alpha__echo", {"text": "early"}))
        await face.receive()
        assert face.calls.forwarded == 0


async def test_a_cancelled_fast_call_gets_no_answer_and_the_next_call_does(alpha: Gateways) -> None:
    async with stdio_face(alpha[True]) as face:
        gateway = face.gateway
        await face.send(tool_call("stuck", "alpha__hang", {}))
        pending = lambda: gateway.connection("alpha").pending_requests  # noqa: E731
        await gateway.wait_until(lambda: pending() == 1, timeout_secs=DEADLINE)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "stuck"}}
        await face.send(cancel)
        await gateway.wait_until(lambda: pending() == 0, timeout_secs=DEADLINE)
        answer = await face.call("next", "alpha__echo", {"text": "after"})
        assert answer["id"] == "next"  # nothing was written for "stuck"
        assert face.calls.forwarded == 2


@pytest.mark.parametrize(
    "junk",
    [
        b"{not json\n",
        b"\xff\xfe\n",
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[]}\n',
        b"[]\n",
        # Values the fast path reads, of types it must not trip over.
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__echo",'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":{},"io.modelcontextprotocol/clientCapabilities":[]}}}\n',
        b'{"jsonrpc":"2.0","id":[],"method":"tools/call","params":{"name":{},"arguments":[]}}\n',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}\n',
    ],
)
async def test_a_bad_line_harms_no_other_call(junk: bytes, alpha: Gateways) -> None:
    async with stdio_face(alpha[True]) as face:
        await face.send(tool_call("slow", "alpha__echo", {"text": "before"}))
        await face.send(junk)
        got = [await face.receive()]
        answer = await face.call("after", "alpha__echo", {"text": "after"})
        got.append(answer)
        while not any(g.get("id") == "after" for g in got):
            got.append(await face.receive())
        by_id = {g.get("id"): g for g in got}
        assert by_id["slow"]["result"]["content"][0]["text"] == "before"
        assert by_id["after"]["result"]["content"][0]["text"] == "after"


async def test_a_broken_answer_from_an_upstream_fails_that_call_only() -> None:
    async with own_stdio_face(upstream("garbled", "tests.upstream.garbled_server")) as face:
        before = await face.call(1, "garbled__echo", {"text": "before"})
        broken = await face.call(2, "garbled__garble", {})
        after = await face.call(3, "garbled__echo", {"text": "after"})
        assert before["result"]["content"][0]["text"] == "before"
        assert broken["error"]["message"].startswith("garbled: answered with a line that is not JSON")
        assert after["result"]["content"][0]["text"] == "after", "the upstream pipe is still up"
        assert face.calls.forwarded == 3


async def test_a_20_mb_result_comes_through_whole(alpha: Gateways) -> None:
    async with stdio_face(alpha[True]) as face:
        answer = await face.call(1, "alpha__blob", {"size": 20 << 20})
        assert len(answer["result"]["content"][0]["text"]) == 20 << 20
        assert answer["result"]["_meta"][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"


async def handshake(face: Face, capabilities: dict[str, Any], version: str = "2025-11-25") -> dict[str, Any]:
    client = {"name": "t", "version": "1"}
    init_params = {"protocolVersion": version, "capabilities": capabilities, "clientInfo": client}
    await face.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init_params})
    answer = await face.receive()
    await face.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


def legacy_call(ident: Any, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


async def legacy_answers(
    face_of: AbstractAsyncContextManager[Face], calls: list[tuple[str, dict[str, Any]]] = CALLS
) -> tuple[list[dict[str, Any]], int]:
    """A handshake-era client with no capabilities making ``calls``, one at a time."""
    async with face_of as face:
        await handshake(face, {})
        got = await face.one_by_one(legacy_call(i, name, args) for i, (name, args) in enumerate(calls))
        return got, face.calls.forwarded


async def test_a_handshake_era_session_gets_from_the_fast_path_what_the_full_pipeline_gives(alpha: Gateways) -> None:
    fast, forwarded = await legacy_answers(stdio_face(alpha[True]))
    full, not_forwarded = await legacy_answers(stdio_face(alpha[False]))
    assert fast == full
    assert (forwarded, not_forwarded) == (len(CALLS) - 1, 0)
    assert fast[1]["result"]["structuredContent"] == {"total": 42}
    assert "error" in fast[5]


MRTR_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("mrtr__mrtr_state_only", {}),  # a round with nothing to ask: retried, then the result
    ("mrtr__mrtr_elicit_form", {}),  # asks what this client cannot give: the refusal's error
    ("mrtr__mrtr_sample", {"prompt": "hi"}),
]


async def test_an_upstream_asking_back_gets_the_full_pipelines_answers_for_a_handshake_era_client() -> None:
    mrtr = upstream("mrtr", "tests.upstream.mrtr_server")
    fast, forwarded = await legacy_answers(own_stdio_face(mrtr, fast_path=True), MRTR_CALLS)
    full, _ = await legacy_answers(own_stdio_face(mrtr, fast_path=False), MRTR_CALLS)
    assert fast == full
    assert forwarded == len(MRTR_CALLS)
    assert "resultType" not in fast[0]["result"] and "_meta" not in fast[0]["result"]
    assert fast[0]["result"]["content"][0]["text"].startswith("state only")
    assert "error" in fast[1] and "error" in fast[2]


async def test_calls_sent_together_are_each_answered_whole_once(alpha: Gateways) -> None:
    """Many calls in flight at once: the face and the upstream pipe write what came in
    together in one go, and every answer still leaves as its own whole line."""
    async with stdio_face(alpha[True]) as face:
        batch = [tool_call(i, "alpha__echo", {"text": f"t{i}"}) for i in range(40)]
        batch.insert(20, {"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {"_meta": MODERN_META}})
        await face.send(b"".join(orjson.dumps(message) + b"\n" for message in batch))
        got: dict[Any, dict[str, Any]] = {}
        for _ in batch:
            answer = await face.receive()
            assert answer["id"] not in got
            got[answer["id"]] = answer
        assert "alpha__echo" in {tool["name"] for tool in got.pop("list")["result"]["tools"]}
        assert {i: a["result"]["content"][0]["text"] for i, a in got.items()} == {i: f"t{i}" for i in range(40)}
        assert face.calls.forwarded == 40
