"""Raw JSON-RPC calls to a 2026-07-28 streamable-HTTP upstream over pooled keep-alive connections.

At 2026-07-28 every request stands alone (no protocol session), so a raw call is one POST
carrying the envelope the SDK session would stamp. aiohttp keeps the connections open and
sets TCP_NODELAY; the answer comes back as one JSON body or as an SSE stream whose event
carrying our id is the answer. Bodies past ``max_message_bytes`` fail that call only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import aiohttp
import anyio
import orjson

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError
from mcp_aggregator.upstreams.stdio_pipe import RESULT_TOO_LARGE, ResultTooLargeError

_ACCEPT: Final = "application/json, text/event-stream"
_CHUNK: Final = 1 << 16


class HttpRaw:
    """A pooled HTTP client for one upstream URL; ``aclose`` it with the session."""

    def __init__(self, url: str, headers: Mapping[str, str], *, name: str, max_message_bytes: int) -> None:
        self.url = url
        self.name = name
        self.max_message_bytes = max_message_bytes
        self._headers = {**headers, "accept": _ACCEPT, "content-type": "application/json"}
        connector = aiohttp.TCPConnector(limit=256, keepalive_timeout=60)
        self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))

    async def aclose(self) -> None:
        # Shielded: the session is closed while its owner task is being cancelled, and
        # aiohttp's close would otherwise meet the cancellation again at every await.
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self._session.close()

    async def call(self, message: dict[str, Any], headers: Mapping[str, str]) -> bytes:
        """POST one request; the JSON-RPC answer as bytes. Raises ``UpstreamError``s."""
        body = orjson.dumps(message)
        try:
            async with self._session.post(self.url, data=body, headers={**self._headers, **headers}) as response:
                if response.status >= 400:
                    text = (await response.content.read(2048)).decode(errors="replace")
                    raise UpstreamCallError(self.name, f"HTTP {response.status}: {text}", code=-32603)
                if response.content_type == "text/event-stream":
                    return await self._from_events(response, message["id"])
                return await self._bounded(response)
        except aiohttp.ClientError as exc:
            raise UpstreamClosedError(self.name, f"HTTP request failed: {exc}") from exc

    async def _bounded(self, response: aiohttp.ClientResponse) -> bytes:
        parts: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > self.max_message_bytes:
                raise self._too_large(size)
            parts.append(chunk)
        return b"".join(parts)

    async def _from_events(self, response: aiohttp.ClientResponse, ident: Any) -> bytes:
        """The ``data`` of the SSE event that answers ``ident`` (notifications before it are skipped)."""
        data: list[bytes] = []
        size = 0
        # Lines are split by hand: aiohttp's line reader refuses lines over 64 KiB, and a
        # large result is one long ``data:`` line. Joining once per line keeps it linear.
        async for line in _lines(response, self.max_message_bytes, self._too_large):
            if line.startswith(b"data:"):
                piece = line[5:].lstrip()
                size += len(piece)
                if size > self.max_message_bytes:
                    raise self._too_large(size)
                data.append(piece)
            elif not line and data:
                event = b"\n".join(data)
                data, size = [], 0
                if orjson.loads(event).get("id") == ident:
                    return event
        raise UpstreamClosedError(self.name, "the event stream ended without an answer")

    def _too_large(self, size: int) -> ResultTooLargeError:
        text = f"result of more than {size} bytes exceeds serve.max_result_bytes ({self.max_message_bytes})"
        return ResultTooLargeError(self.name, text, code=RESULT_TOO_LARGE)


async def _lines(
    response: aiohttp.ClientResponse, limit: int, too_large: Callable[[int], Exception]
) -> AsyncIterator[bytes]:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            parts.append(chunk[start:end])
            yield b"".join(parts).rstrip(b"\r")
            parts, size, start = [], 0, end + 1
        if start < len(chunk):
            parts.append(chunk[start:])
            size += len(chunk) - start
            if size > limit:
                raise too_large(size)
    if parts:
        yield b"".join(parts).rstrip(b"\r")
