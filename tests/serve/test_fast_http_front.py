"""The HTTP fast path's front: requests read straight off the socket answer exactly what
uvicorn and the SDK endpoint answer, byte order on a connection is kept, and a request whose
routing headers disagree with its body gets the SDK's refusal, not a fast answer.

The two gateways (fast path on, and off) serve the whole module (``shared_gateways``): every
test opens connections of its own, so sharing them changes no answer."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import mcp_types as types
import orjson
import pytest
import pytest_asyncio

from tests.serve.shared_gateways import Gateways, both_paths
from tests.serve.test_fast_path import MODERN_HEADERS, MODERN_META, echo_call

DEADLINE = 20


pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, and with it the two gateways."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateways() -> AsyncIterator[Gateways]:
    async with both_paths() as shared:
        yield shared


def request(message: dict[str, Any], headers: dict[str, str] | None = None, *, host: str) -> bytes:
    body = orjson.dumps(message)
    lines = [b"POST /mcp HTTP/1.1", b"Host: " + host.encode(), b"Content-Type: application/json"]
    for name, value in {**MODERN_HEADERS, **(headers or {})}.items():
        lines.append(f"{name}: {value}".encode())
    lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def tools_list(ident: int, *, host: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/list", "params": {"_meta": MODERN_META}}
    return request(message, {"mcp-method": "tools/list", "mcp-name": ""}, host=host).replace(b"mcp-name: \r\n", b"")


class Connection:
    """One kept-alive HTTP/1.1 connection read response by response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def response(self) -> tuple[int, dict[bytes, bytes], bytes]:
        async with asyncio.timeout(DEADLINE):
            head = await self.reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head[:-4].split(b"\r\n")
            headers = {}
            for line in header_lines:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            body = await self.reader.readexactly(int(headers[b"content-length"]))
            return int(status_line.split()[1]), headers, body

    async def answer(self) -> dict[str, Any]:
        status, _, body = await self.response()
        assert status == 200, body
        answer: dict[str, Any] = orjson.loads(body)
        return answer


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[tuple[Connection, str]]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        yield Connection(reader, writer), parts.netloc
    finally:
        writer.close()


def echoed(answer: dict[str, Any]) -> str:
    text: str = answer["result"]["content"][0]["text"]
    return text


async def test_a_request_sent_a_byte_at_a_time_is_answered(gateways: Gateways) -> None:
    fast, url = gateways[True]
    before = fast.forwarded
    async with connected(url) as (conn, host):
        raw = request(echo_call(1, "slowly"), host=host)
        for i in range(len(raw)):
            conn.writer.write(raw[i : i + 1])
            await conn.writer.drain()
        answer = await conn.answer()
        assert (answer["id"], echoed(answer)) == (1, "slowly")
        assert fast.forwarded - before == 1


async def test_requests_in_one_write_are_answered_in_order_fast_or_not(gateways: Gateways) -> None:
    fast, url = gateways[True]
    before = fast.forwarded
    async with connected(url) as (conn, host):
        batch = [
            request(echo_call(1, "one"), host=host),
            tools_list(2, host=host),
            request(echo_call(3, "three"), host=host),
            request(echo_call(4, "four"), host=host),
        ]
        conn.writer.write(b"".join(batch))
        first, listed, third, fourth = [await conn.answer() for _ in batch]
        assert (first["id"], echoed(first)) == (1, "one")
        assert listed["id"] == 2 and "alpha__echo" in {t["name"] for t in listed["result"]["tools"]}
        assert [(a["id"], echoed(a)) for a in (third, fourth)] == [(3, "three"), (4, "four")]
        # Then one at a time on the same connection, after the SDK's answer and after a fast one.
        for ident in (5, 6):
            conn.writer.write(request(echo_call(ident, str(ident)), host=host))
            assert echoed(await conn.answer()) == str(ident)
        conn.writer.write(tools_list(7, host=host))
        assert (await conn.answer())["id"] == 7
        assert fast.forwarded - before == 5


@pytest.mark.parametrize(
    "header_line",
    [b"Bad Name: x", b" folded: x", b"X-Junk: a\x01b", b"Content-Length: 3"],
    ids=["space-in-name", "folded-line", "control-byte", "two-lengths"],
)
async def test_a_malformed_head_gets_uvicorns_answer_on_either_path(gateways: Gateways, header_line: bytes) -> None:
    answers = []
    for fast_path in (True, False):
        async with connected(gateways[fast_path][1]) as (conn, host):
            raw = request(echo_call(1, "x"), host=host)
            conn.writer.write(raw.replace(b"\r\nContent-Type:", b"\r\n" + header_line + b"\r\nContent-Type:", 1))
            answers.append((await conn.response())[::2])
    assert answers[0] == answers[1]
    assert answers[0][0] == 400


async def test_connection_close_is_honoured_on_the_raw_path(gateways: Gateways) -> None:
    fast, url = gateways[True]
    before = fast.forwarded
    async with connected(url) as (conn, host):
        conn.writer.write(request(echo_call(1, "bye"), {"connection": "close"}, host=host))
        status, headers, _ = await conn.response()
        assert (status, headers[b"connection"]) == (200, b"close")
        async with asyncio.timeout(DEADLINE):
            assert await conn.reader.read() == b""
        assert fast.forwarded - before == 1


def disagreeing(case: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A call whose headers and body disagree the way ``case`` says."""
    message = echo_call(1, "x")
    headers = [*MODERN_HEADERS.items(), ("content-type", "application/json")]
    if case == "name-header":
        headers = [(k, "alpha__add" if k == "mcp-name" else v) for k, v in headers]
    elif case == "method-header":
        headers = [(k, "tools/list" if k == "mcp-method" else v) for k, v in headers]
    elif case == "version-header":
        message["params"]["_meta"] = {**MODERN_META, types.PROTOCOL_VERSION_META_KEY: "2099-01-01"}
    elif case == "no-capabilities":
        message["params"]["_meta"] = {k: v for k, v in MODERN_META.items() if k != types.CLIENT_CAPABILITIES_META_KEY}
    elif case == "no-envelope":
        del message["params"]["_meta"]
    elif case == "name-header-twice":
        headers.append(("mcp-name", "alpha__echo"))
    elif case == "no-name-header":
        headers = [(k, v) for k, v in headers if k != "mcp-name"]
    return message, headers


@pytest.mark.parametrize(
    "case",
    [
        "name-header",
        "method-header",
        "version-header",
        "no-capabilities",
        "no-envelope",
        "name-header-twice",
        "no-name-header",
    ],
)
async def test_routing_headers_that_disagree_with_the_body_get_the_sdks_refusal(gateways: Gateways, case: str) -> None:
    message, headers = disagreeing(case)
    answers = []
    for fast_path in (True, False):
        fast, url = gateways[fast_path]
        before = fast.forwarded
        async with httpx.AsyncClient() as http:
            answered = await http.post(url, content=orjson.dumps(message), headers=headers)
            answers.append((answered.status_code, answered.json()))
            assert fast.forwarded == before
    assert answers[0] == answers[1]
    status, body = answers[0]
    assert "error" in body and "result" not in body, (status, body)
