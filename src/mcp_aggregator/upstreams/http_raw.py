"""Raw JSON-RPC calls to a 2026-07-28 streamable-HTTP upstream over pooled keep-alive connections.

At 2026-07-28 every request stands alone (no protocol session), so a raw call is one POST
carrying the envelope the SDK session would stamp, sent on an ``Http1Pool`` connection. The
answer comes back as one JSON body or as an SSE stream whose event carrying our id is the
answer. Bodies past ``max_message_bytes`` fail that call only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import anyio
import orjson

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError, UpstreamError
from mcp_aggregator.upstreams.http1_pool import Http1Pool, PoolLimits, Response
from mcp_aggregator.upstreams.stdio_pipe import RESULT_TOO_LARGE, LogSink, ResultTooLargeError, Settle

_ACCEPT: Final = "application/json, text/event-stream"
_ERROR_TEXT: Final = 2048


class HttpRaw:
    """A pooled HTTP client for one upstream URL; ``aclose`` it with the session.

    Made on the running asyncio loop that uses it. Raises ``ConfigError`` for a URL that is not
    http(s) and ``InvalidInputError`` for a header that cannot be sent.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        name: str,
        max_message_bytes: int,
        limits: PoolLimits | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.max_message_bytes = max_message_bytes
        fixed = {**headers, "accept": _ACCEPT, "content-type": "application/json"}
        self.pool = Http1Pool(url, fixed, name=name, limits=limits)
        """The connections the calls go over."""

    async def aclose(self) -> None:
        # Shielded: the session is closed while its owner task is being cancelled, and the
        # wait for the connections to end would otherwise meet the cancellation at once.
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self.pool.aclose()

    async def call(self, message: dict[str, Any], headers: Mapping[str, str], on_log: LogSink | None = None) -> bytes:
        """POST one request; the JSON-RPC answer as bytes. ``on_log`` takes the params of log
        messages the answer's event stream carries before it. Raises ``UpstreamError``s."""
        response = await self.pool.post(orjson.dumps(message), headers)
        return await self._answer(response, message["id"], on_log)

    def submit(
        self, message: dict[str, Any], headers: Mapping[str, str], settle: Settle, on_log: LogSink | None = None
    ) -> HttpExchange | None:
        """``call`` answered by callback, when a pooled connection is free now: ``settle`` gets
        the answer or the error, once, unless the exchange is withdrawn first. A plain JSON
        answer is read in the connection's callbacks, with no task; an event stream or an
        HTTP error is read by a task as ``call`` reads it. None when no connection is free
        (nothing was sent: ``call`` instead). Raises ``InvalidInputError`` for a header that
        cannot be sent."""
        response = self.pool.post_now(orjson.dumps(message), headers)
        if response is None:
            return None
        exchange = HttpExchange(self, response, message["id"], settle, on_log)
        response.listen(exchange.moved)
        return exchange

    async def _answer(self, response: Response, ident: Any, on_log: LogSink | None) -> bytes:
        try:
            if response.status >= 400:
                if response.media_type == b"application/json":
                    # A spec-correct server answers a JSON-RPC error (INVALID_PARAMS, say) with
                    # a 4xx status and the error as the body: that error is the answer, as the
                    # SDK's client reads it.
                    error = _rpc_error(await self._bounded(response))
                    if error is None:
                        raise UpstreamCallError(self.name, f"HTTP {response.status}", code=-32603)
                    answer = orjson.dumps({"jsonrpc": "2.0", "id": ident, "error": error})
                    response.finish()
                    return answer
                text = (await _prefix(response, _ERROR_TEXT)).decode(errors="replace")
                raise UpstreamCallError(self.name, f"HTTP {response.status}: {text}", code=-32603)
            if response.media_type == b"text/event-stream":
                answer = await self._from_events(response, ident, on_log)
            else:
                answer = await self._bounded(response)
        except BaseException:
            # An error, a result too large, a cancelled caller: the rest of the response is
            # unread, so the connection cannot carry another request.
            response.close()
            raise
        response.finish()
        return answer

    async def _bounded(self, response: Response) -> bytes:
        if response.content_length is not None and response.content_length > self.max_message_bytes:
            raise self._too_large(response.content_length)
        parts: list[bytes] = []
        size = 0
        while chunks := await response.read():
            size += sum(map(len, chunks))
            if size > self.max_message_bytes:
                raise self._too_large(size)
            parts += chunks
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def _from_events(self, response: Response, ident: Any, on_log: LogSink | None) -> bytes:
        """The ``data`` of the SSE event that answers ``ident``; log messages before it go to
        ``on_log``, other notifications are skipped."""
        data: list[bytes] = []
        size = 0
        # A large result is one long ``data:`` line: pieces are joined once per line, so it stays linear.
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
                parsed = orjson.loads(event)
                if parsed.get("id") == ident:
                    return event
                params = parsed.get("params")
                if on_log is not None and parsed.get("method") == "notifications/message" and isinstance(params, dict):
                    on_log(params)
        raise UpstreamClosedError(self.name, "the event stream ended without an answer")

    def _too_large(self, size: int) -> ResultTooLargeError:
        text = f"result of more than {size} bytes exceeds serve.max_result_bytes ({self.max_message_bytes})"
        return ResultTooLargeError(self.name, text, code=RESULT_TOO_LARGE)


class HttpExchange:
    """One raw call answered by callback (``HttpRaw.submit``)."""

    __slots__ = ("_ident", "_on_log", "_raw", "_response", "_settle", "_size", "_task", "done")

    def __init__(self, raw: HttpRaw, response: Response, ident: Any, settle: Settle, on_log: LogSink | None) -> None:
        self._raw = raw
        self._response = response
        self._ident = ident
        self._settle = settle
        self._on_log = on_log
        self._size = 0
        self._task: asyncio.Task[None] | None = None
        self.done = False

    def moved(self) -> None:
        """The response moved on (called by the connection, from its read callbacks)."""
        if self.done:
            return
        response = self._response
        try:
            response.check()
        except UpstreamClosedError as exc:
            self._end(exc)
            return
        if not response.head_done:
            return
        if response.status >= 400 or response.media_type == b"text/event-stream":
            # Read as ``call`` reads them, by a task: rare, or long (a stream with log messages).
            response.listen(None)
            self._task = asyncio.get_running_loop().create_task(self._read_rest())
            return
        limit = self._raw.max_message_bytes
        length = response.content_length
        if (length is not None and length > limit) or response.buffered > limit:
            response.close()
            self._end(self._raw._too_large(max(length or 0, response.buffered)))
            return
        if response.complete:
            parts = response.take_body()
            response.finish()
            self._end(parts[0] if len(parts) == 1 else b"".join(parts))

    async def _read_rest(self) -> None:
        try:
            answer: bytes | Exception = await self._raw._answer(self._response, self._ident, self._on_log)
        except UpstreamError as exc:
            answer = exc
        except (OSError, ValueError) as exc:
            answer = UpstreamClosedError(self._raw.name, f"reading the answer failed: {exc}")
        self._end(answer)

    def _end(self, outcome: bytes | Exception) -> None:
        if not self.done:
            self.done = True
            self._settle(outcome)

    def withdraw(self) -> None:
        """The caller gave up: nothing is settled, and the connection, mid-exchange, closes."""
        if self.done:
            return
        self.done = True
        if self._task is not None:
            self._task.cancel()  # the task closes the response
        else:
            self._response.close()


def _rpc_error(body: bytes) -> dict[str, Any] | None:
    """The ``error`` of a JSON-RPC error response, or None when ``body`` is not one."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    return error if isinstance(error, dict) else None


async def _prefix(response: Response, limit: int) -> bytes:
    """Up to ``limit`` bytes from the start of the body."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (chunks := await response.read()):
        parts += chunks
        size += sum(map(len, chunks))
    return b"".join(parts)[:limit]


async def _lines(response: Response, limit: int, too_large: Callable[[int], Exception]) -> AsyncIterator[bytes]:
    parts: list[bytes] = []
    size = 0
    while chunks := await response.read():
        for chunk in chunks:
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
