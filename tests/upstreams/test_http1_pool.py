"""The HTTP/1.1 pool and the raw calls over it, against real servers on 127.0.0.1.

Scripted origins (``http_origin``: anyio listeners writing exact bytes) show the framing cases; the SDK's
echo server shows a real upstream. Every scenario runs on asyncio's own loop and on uvloop, the
gateway's, whose transports differ in the details the pool relies on.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
import uvicorn
import uvloop
from anyio.abc import ByteStream
from bench.echo_server import app as echo_app

from mcp_aggregator.errors import ConfigError, InvalidInputError, UpstreamCallError, UpstreamClosedError
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.upstreams.http1_pool import Http1Pool, PoolLimits
from mcp_aggregator.upstreams.http_raw import HttpRaw
from mcp_aggregator.upstreams.stdio_pipe import RESULT_TOO_LARGE, ResultTooLargeError
from tests.upstreams.http_origin import (
    LAST_CHUNK,
    Origin,
    Seen,
    chunk,
    chunked_head,
    event,
    response,
    serving,
    tls_files,
)

Scenario = Callable[[], Awaitable[None]]
Run = Callable[[Scenario], None]
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
HEADERS = {"mcp-method": "tools/call", "mcp-name": "echo"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Run:
    """Runs a scenario to its end on one of the loops, under a deadline."""
    factory = LOOPS[request.param]

    def run(scenario: Scenario) -> None:
        async def bounded() -> None:
            with anyio.fail_after(30):
                await scenario()

        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(bounded())

    return run


async def until(predicate: Callable[[], bool]) -> None:
    """Let the loop run until the client side sees ``predicate`` (under the scenario's deadline).

    The pool's connections change state in transport callbacks, which no event reports to a
    test; yielding once per loop turn sees the change on the turn it happens.
    """
    while not predicate():
        await anyio.lowlevel.checkpoint()


def message(ident: Any, text: str = "hi") -> dict[str, Any]:
    params = {"name": "echo", "arguments": {"text": text}}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def answer_to(seen: Seen, size: int = 0) -> bytes:
    request = orjson.loads(seen.body)
    text = request["params"]["arguments"]["text"] + "x" * size
    return orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"text": text}})


async def echo(seen: Seen, stream: ByteStream) -> bool:
    await stream.send(response(answer_to(seen)))
    return True


async def post(pool: Http1Pool, body: bytes = b"{}") -> bytes:
    """One exchange on the pool: its body, the connection handed back."""
    exchange = await pool.post(body, {})
    parts: list[bytes] = []
    while chunks := await exchange.read():
        parts += chunks
    exchange.finish()
    return b"".join(parts)


@asynccontextmanager
async def client(url: str, *, max_message_bytes: int = 1 << 20, **kwargs: Any) -> AsyncIterator[HttpRaw]:
    raw = HttpRaw(url, {"Authorization": "Bearer t"}, name="up", max_message_bytes=max_message_bytes, **kwargs)
    try:
        yield raw
    finally:
        await raw.aclose()


# -- answers


def test_a_json_answer_comes_back_and_the_connection_is_kept(run: Run) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin, client(origin.url) as raw:
            for ident in range(3):
                assert orjson.loads(await raw.call(message(ident), HEADERS)) == orjson.loads(
                    answer_to(origin.requests[-1])
                )
            assert origin.opened == 1
            seen = origin.requests[0]
            lines = seen.head.split("\r\n")
            assert lines[0] == "POST /mcp HTTP/1.1"
            assert f"Host: 127.0.0.1:{origin.port}" in lines
            for line in ("Authorization: Bearer t", "mcp-method: tools/call", "mcp-name: echo"):
                assert line in lines
            assert "accept: application/json, text/event-stream" in lines
            assert f"Content-Length: {len(seen.body)}" in lines
            assert orjson.loads(seen.body) == message(0)

    run(scenario)


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
def test_the_sdk_echo_server_answers_over_the_pool(run: Run, json_response: bool) -> None:
    async def scenario() -> None:
        app = echo_app.streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=json_response
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        # Listening before uvicorn starts: the first request queues on it, nothing to poll.
        sock = bind_socket("127.0.0.1", 0)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        headers = {**HEADERS, "mcp-protocol-version": "2026-07-28"}
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.serve, sockets=[sock]))
            try:
                async with client(url, max_message_bytes=4 << 20) as raw:
                    call = message("a")
                    call["params"]["_meta"] = META
                    answer = orjson.loads(await raw.call(call, headers))
                    assert answer["id"] == "a"
                    assert answer["result"]["structuredContent"] == {"result": "hi"}
                    params = {"name": "blob", "arguments": {"size": 300_000}, "_meta": META}
                    blob = {**call, "id": "b", "params": params}
                    answer = orjson.loads(await raw.call(blob, {**headers, "mcp-name": "blob"}))
                    assert answer["result"]["structuredContent"] == {"result": "x" * 300_000}
            finally:
                server.should_exit = True
        sock.close()

    run(scenario)


def test_an_sse_answer_skips_the_notifications_before_it_and_keeps_a_long_line_whole(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        progress = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
        other = orjson.dumps({"jsonrpc": "2.0", "id": "other", "result": {}})
        body = event(progress) + event(other) + event(answer_to(seen, size=200_000))
        await stream.send(chunked_head("text/event-stream; charset=utf-8"))
        for start in range(0, len(body), 7_000):
            await stream.send(chunk(body[start : start + 7_000]))
        await stream.send(LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            got = await raw.call(message(1), HEADERS)
            assert got == answer_to(origin.requests[0], size=200_000)
            await until(lambda: raw.pool.idle_count == 1)  # the stream's end, after the answer
            assert orjson.loads(await raw.call(message(2), HEADERS))["id"] == 2
            assert origin.opened == 1

    run(scenario)


def test_an_event_stream_that_ends_without_the_answer_is_an_error(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
        await stream.send(chunked_head("text/event-stream") + chunk(event(note)) + LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            with pytest.raises(UpstreamClosedError, match="ended without an answer"):
                await raw.call(message(1), HEADERS)

    run(scenario)


def test_a_chunked_json_body_is_joined(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        body = answer_to(seen, size=50_000)
        await stream.send(chunked_head("application/json"))
        for start in range(0, len(body), 4_096):
            await stream.send(chunk(body[start : start + 4_096]))
        await stream.send(LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            assert await raw.call(message(1), HEADERS) == answer_to(origin.requests[0], size=50_000)
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1], size=50_000)
            assert origin.opened == 1

    run(scenario)


def test_a_body_that_ends_with_the_connection_is_read_to_its_end(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        await stream.send(answer_to(seen, size=10_000))
        return False

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            for ident in (1, 2):
                assert await raw.call(message(ident), HEADERS) == answer_to(origin.requests[-1], size=10_000)
            assert origin.opened == 2

    run(scenario)


def test_a_response_saying_connection_close_is_not_reused(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(response(answer_to(seen), extra="Connection: close\r\n"))
        return True  # the server would go on; the client must not

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            await raw.call(message(1), HEADERS)
            await raw.call(message(2), HEADERS)
            assert origin.opened == 2
            await origin.wait_for(lambda: origin.ended == 1)
            assert raw.pool.idle_count == 0

    run(scenario)


def test_an_interim_response_before_the_answer_is_skipped(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n" + response(answer_to(seen)))
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            assert await raw.call(message(1), HEADERS) == answer_to(origin.requests[0])

    run(scenario)


# -- failures


def test_an_http_error_carries_its_status_and_the_start_of_its_body(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(response(b"boom" + b"!" * 5_000, status="500 Internal Server Error", kind="text/plain"))
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            with pytest.raises(UpstreamCallError) as caught:
                await raw.call(message(1), HEADERS)
            assert caught.value.code == -32603
            assert str(caught.value) == "up: HTTP 500: boom" + "!" * (2048 - 4)

    run(scenario)


@pytest.mark.parametrize("framing", ["content-length", "chunked", "sse"])
def test_a_result_past_the_limit_fails_that_call_only(run: Run, framing: str) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        big = orjson.loads(seen.body)["params"]["arguments"]["text"] == "big"
        body = answer_to(seen, size=5_000 if big else 0)
        if framing == "content-length":
            await stream.send(response(body))
        elif framing == "chunked":
            await stream.send(chunked_head("application/json") + chunk(body[:3_000]) + chunk(body[3_000:]) + LAST_CHUNK)
        else:
            await stream.send(chunked_head("text/event-stream") + chunk(event(body)) + LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url, max_message_bytes=1_000) as raw:
            with pytest.raises(ResultTooLargeError) as caught:
                await raw.call(message(1, "big"), HEADERS)
            assert caught.value.code == RESULT_TOO_LARGE
            assert "exceeds serve.max_result_bytes (1000)" in str(caught.value)
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])
            assert origin.opened == 2  # the connection of the refused body was closed, not reused

    run(scenario)


def test_a_server_that_closes_instead_of_answering_is_an_upstream_closed_error(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        if seen.connection == 0:
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
        return False

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            with pytest.raises(UpstreamClosedError, match="closed before the response ended"):
                await raw.call(message(1), HEADERS)
            with pytest.raises(UpstreamClosedError, match="closed before the response ended"):
                await raw.call(message(2), HEADERS)
            assert origin.opened == 2

    run(scenario)


def test_a_malformed_response_is_an_upstream_closed_error(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(b"SMTP ready\r\n\r\n")
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            with pytest.raises(UpstreamClosedError, match="malformed HTTP response"):
                await raw.call(message(1), HEADERS)

    run(scenario)


def test_bytes_after_a_complete_response_close_the_connection(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(response(answer_to(seen)) + response(b"{}"))
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            assert await raw.call(message(1), HEADERS) == answer_to(origin.requests[0])
            await origin.wait_for(lambda: origin.ended == 1)
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])

    run(scenario)


def test_bytes_on_an_idle_connection_close_it(run: Run) -> None:
    stray = anyio.Event()

    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(response(answer_to(seen)))
        if seen.connection == 0:
            await stray.wait()
            await stream.send(b"HTTP/1.1 200 OK\r\n")
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            await raw.call(message(1), HEADERS)
            stray.set()
            await origin.wait_for(lambda: origin.ended == 1)
            assert raw.pool.idle_count == 0
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])

    run(scenario)


def test_an_event_stream_line_past_the_limit_fails_before_it_ends(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(chunked_head("text/event-stream") + chunk(b": " + b"x" * 5_000) + LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url, max_message_bytes=1_000) as raw:
            with pytest.raises(ResultTooLargeError):
                await raw.call(message(1), HEADERS)

    run(scenario)


def test_an_event_stream_whose_last_line_has_no_newline_still_answers(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(chunked_head("text/event-stream") + chunk(event(answer_to(seen)) + b": bye") + LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            assert await raw.call(message(1), HEADERS) == answer_to(origin.requests[0])

    run(scenario)


def test_a_refused_connection_is_an_upstream_closed_error(run: Run) -> None:
    async def scenario() -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
            async with client(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp") as raw:
                with pytest.raises(UpstreamClosedError, match=r"cannot connect to http://127\.0\.0\.1"):
                    await raw.call(message(1), HEADERS)

    run(scenario)


@pytest.mark.parametrize(
    "headers",
    [{"x-a": "1\r\nx-b: 2"}, {"x-a": "1\nx"}, {"x-a": "\x00"}, {"x a": "1"}, {"x:a": "1"}, {"Content-Length": "1"}],
    ids=["crlf", "lf", "nul", "space-in-name", "colon-in-name", "framing"],
)
def test_a_header_that_would_inject_is_refused_before_anything_is_sent(run: Run, headers: dict[str, str]) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin, client(origin.url) as raw:
            with pytest.raises(InvalidInputError):
                await raw.call(message(1), headers)
            with pytest.raises(InvalidInputError):
                HttpRaw(origin.url, headers, name="up", max_message_bytes=100)
            await raw.call(message(2), HEADERS)
            assert [seen.ident for seen in origin.requests] == [2]

    run(scenario)


def test_urls_other_than_http_are_refused(run: Run) -> None:
    async def scenario() -> None:
        for url in ("ftp://127.0.0.1/x", "http:///path", "http://127.0.0.1/a b"):
            with pytest.raises(ConfigError):
                Http1Pool(url, {}, name="up")

    run(scenario)


# -- connections


def test_a_callers_header_replaces_a_fixed_one_of_the_same_name(run: Run) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin, client(origin.url) as raw:
            await raw.call(message(1), {"ACCEPT": "application/json", "authorization": "Bearer u"})
            lines = origin.requests[0].head.split("\r\n")
            replaced = {line for line in lines if line.lower().startswith(("accept", "authorization"))}
            assert replaced == {"ACCEPT: application/json", "authorization: Bearer u"}

    run(scenario)


def test_credentials_in_the_url_become_basic_auth(run: Run) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin:
            pool = Http1Pool(f"http://me:p%40ss@127.0.0.1:{origin.port}/mcp?x=1", {}, name="up")
            await post(pool, orjson.dumps(message(1)))
            await pool.aclose()
            lines = origin.requests[0].head.split("\r\n")
            assert lines[0] == "POST /mcp?x=1 HTTP/1.1"
            assert "Authorization: Basic bWU6cEBzcw==" in lines

    run(scenario)


def test_an_idle_connection_the_server_closed_is_dropped_and_the_next_call_succeeds(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(response(answer_to(seen)))
        return False  # keep-alive promised, then closed while the client holds it idle

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            await raw.call(message(1), HEADERS)
            await origin.wait_for(lambda: origin.ended == 1)
            await until(lambda: raw.pool.idle_count == 0)
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])
            assert origin.opened == 2

    run(scenario)


def test_a_reused_connection_already_reset_is_retried_once_on_a_new_one(run: Run) -> None:
    reset, reset_done = threading.Event(), threading.Event()

    def answer_one(conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < len(orjson.dumps(message(1))):
            data += conn.recv(65536)
        conn.sendall(response(b'{"ok":true}'))

    def serve(listener: socket.socket) -> None:
        first, _ = listener.accept()
        answer_one(first)
        reset.wait(10)
        # Linger 0: close sends a reset, so the client's next write on this socket fails at once.
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        first.close()
        reset_done.set()
        second, _ = listener.accept()
        with second:
            answer_one(second)

    async def scenario() -> None:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.settimeout(10)
            server = threading.Thread(target=serve, args=(listener,), daemon=True)
            server.start()
            pool = Http1Pool(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp", {}, name="up")
            assert await post(pool, orjson.dumps(message(1))) == b'{"ok":true}'
            reset.set()
            # Blocking the loop on purpose: the pool must not see the reset before it writes.
            assert reset_done.wait(10)
            assert await post(pool, orjson.dumps(message(1))) == b'{"ok":true}'
            await pool.aclose()
            await anyio.to_thread.run_sync(server.join, 10)

    run(scenario)


def test_fifty_calls_in_flight_each_take_a_connection_and_the_idle_ones_are_capped(run: Run) -> None:
    origin_box: list[Origin] = []

    async def answer(seen: Seen, stream: ByteStream) -> bool:
        origin = origin_box[0]
        await origin.wait_for(lambda: len(origin.requests) == 50)
        await stream.send(response(answer_to(seen)))
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            origin_box.append(origin)
            answers: dict[int, bytes] = {}

            async def call(ident: int) -> None:
                answers[ident] = await raw.call(message(ident, f"t{ident}"), HEADERS)

            async with anyio.create_task_group() as tg:
                for ident in range(50):
                    tg.start_soon(call, ident)
            assert {ident: orjson.loads(body)["result"]["text"] for ident, body in answers.items()} == {
                ident: f"t{ident}" for ident in range(50)
            }
            assert origin.opened == 50
            assert raw.pool.idle_count == 32
            await origin.wait_for(lambda: origin.ended == 18)

    run(scenario)


def test_calls_past_the_connection_limit_wait_for_a_free_connection(run: Run) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin, client(origin.url, limits=PoolLimits(max_connections=2)) as raw:
            async with anyio.create_task_group() as tg:
                for ident in range(6):
                    tg.start_soon(raw.call, message(ident), HEADERS)
            assert sorted(seen.ident for seen in origin.requests) == list(range(6))
            assert origin.opened == 2

    run(scenario)


def test_a_cancelled_call_closes_its_connection_and_the_pool_stays_usable(run: Run) -> None:
    started = anyio.Event()

    async def answer(seen: Seen, stream: ByteStream) -> bool:
        if seen.connection > 0:
            return await echo(seen, stream)
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        await stream.send(chunked_head("text/event-stream") + chunk(event(note)))
        started.set()
        await stream.receive()  # until the client goes away
        return False

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url, limits=PoolLimits(max_connections=1)) as raw:
            async with anyio.create_task_group() as tg:
                tg.start_soon(raw.call, message(1), HEADERS)
                await started.wait()
                tg.cancel_scope.cancel()
            await origin.wait_for(lambda: origin.ended == 1)
            # The only slot came back and the half-read connection was not pooled.
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])
            assert origin.opened == 2

    run(scenario)


def test_the_rest_of_a_stream_after_the_answer_is_drained_and_the_connection_reused(run: Run) -> None:
    go_on = anyio.Event()

    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(chunked_head("text/event-stream") + chunk(event(answer_to(seen))))
        if seen.ident == 1:
            await go_on.wait()
        await stream.send(LAST_CHUNK)
        return True

    async def scenario() -> None:
        async with serving(answer) as origin, client(origin.url) as raw:
            assert await raw.call(message(1), HEADERS) == answer_to(origin.requests[0])
            assert raw.pool.idle_count == 0  # still draining
            go_on.set()
            await until(lambda: raw.pool.idle_count == 1)
            assert await raw.call(message(2), HEADERS) == answer_to(origin.requests[1])
            assert origin.opened == 1

    run(scenario)


def test_a_stream_too_long_to_drain_closes_the_connection(run: Run) -> None:
    async def answer(seen: Seen, stream: ByteStream) -> bool:
        await stream.send(chunked_head("text/event-stream") + chunk(event(answer_to(seen))))
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            for _ in range(10):
                await stream.send(chunk(b": keep-alive\r\n" * 1_000))
            await stream.send(LAST_CHUNK)
        return True

    async def scenario() -> None:
        limits = PoolLimits(drain_bytes=20_000)
        async with serving(answer) as origin, client(origin.url, limits=limits) as raw:
            await raw.call(message(1), HEADERS)
            await origin.wait_for(lambda: origin.ended == 1)
            assert raw.pool.idle_count == 0

    run(scenario)


def test_idle_connections_are_closed_after_the_idle_timeout(run: Run) -> None:
    async def scenario() -> None:
        limits = PoolLimits(idle_timeout_secs=0.05)
        async with serving(echo) as origin, client(origin.url, limits=limits) as raw:
            await raw.call(message(1), HEADERS)
            await origin.wait_for(lambda: origin.ended == 1)
            assert raw.pool.idle_count == 0
            await raw.call(message(2), HEADERS)
            assert origin.opened == 2

    run(scenario)


def test_aclose_ends_every_connection_and_refuses_further_calls(run: Run) -> None:
    async def scenario() -> None:
        async with serving(echo) as origin:
            raw = HttpRaw(origin.url, {}, name="up", max_message_bytes=1_000)
            await raw.call(message(1), HEADERS)
            await raw.aclose()
            await origin.wait_for(lambda: origin.ended == 1)
            with pytest.raises(UpstreamClosedError, match="closed"):
                await raw.call(message(2), HEADERS)

    run(scenario)


def test_https_with_a_trusted_ca_answers_over_kept_connections(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca, cert, key = tls_files(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    # The pool's context is ssl.create_default_context(), which reads this at creation.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))

    async def scenario() -> None:
        async with serving(echo, tls=server_tls) as origin:
            async with client(f"https://127.0.0.1:{origin.port}/mcp") as raw:
                for ident in (1, 2):
                    assert await raw.call(message(ident), HEADERS) == answer_to(origin.requests[-1])
                assert origin.opened == 1
                assert "Host: 127.0.0.1:" in origin.requests[0].head
            await origin.wait_for(lambda: origin.ended == 1)

    run(scenario)


def test_https_to_a_server_the_client_does_not_trust_is_refused(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, cert, key = tls_files(tmp_path)
    (tmp_path / "other").mkdir()
    other_ca, _, _ = tls_files(tmp_path / "other")
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(other_ca))

    async def scenario() -> None:
        async with serving(echo, tls=server_tls) as origin, client(f"https://127.0.0.1:{origin.port}/mcp") as raw:
            with pytest.raises(UpstreamClosedError, match="CERTIFICATE_VERIFY_FAILED"):
                await raw.call(message(1), HEADERS)
            assert origin.requests == []

    run(scenario)


# -- answered by callback (the fast path's lane once a pooled connection is free)


async def by_callback(raw: HttpRaw, ident: Any, text: str, logs: list[dict[str, Any]] | None = None) -> bytes:
    """One call as ``HttpRaw.submit`` makes it, on the connection a first call left idle."""
    settled: asyncio.Future[bytes | Exception] = asyncio.get_running_loop().create_future()
    exchange = raw.submit(message(ident, text), HEADERS, settled.set_result, logs.append if logs is not None else None)
    assert exchange is not None, "a pooled connection was free"
    try:
        outcome = await settled
    except asyncio.CancelledError:
        exchange.withdraw()
        raise
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


async def scripted(seen: Seen, stream: ByteStream) -> bool:
    """Answers by the call's text: ``sse`` as an event stream with a log message first,
    ``error`` with HTTP 500, ``big`` past a 1,000-byte limit, ``cut`` cut off mid-body,
    ``hang`` not until the client closes; anything else with a JSON echo."""
    text = orjson.loads(seen.body)["params"]["arguments"]["text"]
    if text == "sse":
        params = {"level": "info", "data": 1}
        log = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        await stream.send(chunked_head("text/event-stream") + chunk(event(log)) + chunk(event(answer_to(seen))))
        await stream.send(LAST_CHUNK)
    elif text == "error":
        await stream.send(response(b"boom", status="500 Internal Server Error", kind="text/plain"))
    elif text == "big":
        await stream.send(response(answer_to(seen, size=5_000)))
    elif text == "cut":
        await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
        return False
    elif text == "hang":
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            await stream.receive()  # until the client closes the connection
        return False
    else:
        await stream.send(response(answer_to(seen)))
    return True


def test_answers_by_callback_come_back_as_awaited_ones_do(run: Run) -> None:
    async def scenario() -> None:
        async with serving(scripted) as origin, client(origin.url, max_message_bytes=1_000) as raw:
            assert raw.submit(message(0), HEADERS, lambda _: None) is None, "no connection yet: call instead"
            await raw.call(message(0), HEADERS)
            assert await by_callback(raw, 1, "plain") == answer_to(origin.requests[-1])
            assert raw.pool.idle_count == 1, "the connection went back to the pool with the answer"
            logs: list[dict[str, Any]] = []
            assert await by_callback(raw, 2, "sse", logs) == answer_to(origin.requests[-1])
            assert logs == [{"level": "info", "data": 1}]
            await until(lambda: raw.pool.idle_count == 1)
            with pytest.raises(UpstreamCallError, match="HTTP 500: boom"):
                await by_callback(raw, 3, "error")
            await raw.call(message(4), HEADERS)
            with pytest.raises(ResultTooLargeError):
                await by_callback(raw, 5, "big")
            await raw.call(message(6), HEADERS)
            with pytest.raises(UpstreamClosedError, match="closed before the response ended"):
                await by_callback(raw, 7, "cut")
            assert origin.opened == 3  # a new connection after the refused body and the cut one

    run(scenario)


def test_a_withdrawn_call_closes_its_connection_and_settles_nothing(run: Run) -> None:
    async def scenario() -> None:
        async with serving(scripted) as origin, client(origin.url) as raw:
            await raw.call(message(0), HEADERS)
            outcomes: list[bytes | Exception] = []
            exchange = raw.submit(message(1, "hang"), HEADERS, outcomes.append)
            assert exchange is not None
            await origin.wait_for(lambda: len(origin.requests) == 2)
            exchange.withdraw()
            await origin.wait_for(lambda: origin.ended == 1)
            assert outcomes == []
            assert raw.pool.idle_count == 0
            assert orjson.loads(await raw.call(message(2), HEADERS))["id"] == 2

    run(scenario)
