"""A lean HTTP/1.1 client: keep-alive connections to one origin, for POSTs of small bodies.

Raw JSON-RPC calls to an HTTP upstream are one POST each, so the client only needs that: an
``asyncio.Protocol`` per connection, ``httptools`` parsing the responses, the request written
as one ``transport.write`` of head and body. No redirects, no cookies, no compression, and no
proxy: the environment's proxy variables are not read (the aiohttp client this replaces ran
with ``trust_env=False``, so raw calls never went through a proxy either).

Invariants:

- A connection serves one exchange at a time and goes back to the pool only after its response
  ended cleanly (body complete, no ``Connection: close``, nothing after it). A caller that is
  done early (``finish``) leaves the rest to be drained by the protocol, bounded in bytes and
  time, and the connection pooled once it ends; a caller that fails or is cancelled ``close``s.
- A connection the server closed while idle leaves the pool at once; idle ones are closed after
  ``idle_timeout_secs``, chosen below the usual server keep-alive (uvicorn's is 5 s) so the
  client, not the server, ends them and a request never races a server's close.
- No read flow control: the caller takes all buffered body bytes each time it wakes, and a
  transport delivers one socket read per loop turn, so little piles up; a body past the
  caller's limit is refused and its connection closed.
- Only one kind of failure is retried, once, on a new connection: the write of a request on a
  reused connection failing at once (the socket already reset). Nothing of the request left
  then, so even a non-idempotent call cannot run twice. A reused connection that takes the
  request and then closes is an error: the server may have run it.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import functools
import re
import socket
import ssl
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, cast
from urllib.parse import unquote, urlsplit

import httptools

from mcp_aggregator.errors import ConfigError, InvalidInputError, UpstreamClosedError

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""Control characters a field value may not hold (RFC 9110 allows HTAB); CR and LF would split it."""
_FRAMING: Final = frozenset({"content-length", "transfer-encoding"})
"""Set by the client alone: a caller's value would change where the request ends."""
_CLOCK_SLACK: Final = 0.01
"""Timers may fire up to the loop's clock resolution early; an idle sweep allows for it."""


@dataclass(frozen=True)
class PoolLimits:
    """How many connections a pool opens and keeps, and for how long."""

    max_connections: int = 256
    """Exchanges in flight at once; more wait for one to end."""
    max_idle: int = 32
    """Idle connections kept; one more released is closed."""
    idle_timeout_secs: float = 4.0
    """Idle connections are closed after this; below the server's keep-alive (uvicorn: 5 s)."""
    drain_bytes: int = 64 << 10
    """Unread response bytes a connection may still discard to be reused; more and it is closed."""


class _TrailingResponseError(Exception):
    """Bytes after a complete response: stops the parser (the connection is then closed)."""


class _State(enum.Enum):
    CONNECTING = "connecting"
    IDLE = "idle"
    ACTIVE = "active"
    DRAINING = "draining"
    CLOSED = "closed"


class Response(asyncio.Protocol):
    """One keep-alive connection and, while a request is out on it, that request's response.

    ``status``, ``media_type`` and ``content_length`` hold once ``Http1Pool.post`` returned it;
    ``read`` yields the body; ``finish`` or ``close`` must end every exchange.
    """

    def __init__(self, pool: Http1Pool) -> None:
        self._pool = pool
        self._loop = pool.loop
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._state = _State.CONNECTING
        self._waiter: asyncio.Future[None] | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._holds_slot = False
        self._listener: Callable[[], None] | None = None
        self.closed: asyncio.Future[None] = self._loop.create_future()
        """Done once the transport is gone."""
        self.reused = False
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self._listener = None
        self.status = 0
        self.media_type = b""
        self.content_length: int | None = None
        self._chunked = False
        self._head_done = False
        self._complete = False
        self._keep_alive = False
        self._trailing = False
        self._error: str | None = None
        self._body: list[bytes] = []
        self._buffered = 0
        self._drain_left = 0

    # -- the caller's side

    async def read(self) -> list[bytes]:
        """The body bytes received since the last read; ``[]`` once the body ended.

        Raises ``UpstreamClosedError`` when the connection fails before the body ended.
        """
        while not self._body:
            if self._complete:
                return []
            self._check()
            await self._wait()
        body = self._body
        self._body = []
        self._buffered = 0
        return body

    def listen(self, listener: Callable[[], None] | None) -> None:
        """Have ``listener`` called, instead of waking a reader, whenever the response moves
        on (its head, body bytes, its end, a failure): a caller answered by callback reads it
        with ``ready``, ``take_body`` and ``check``. None: back to ``head``/``read``."""
        self._listener = listener

    @property
    def head_done(self) -> bool:
        return self._head_done

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def buffered(self) -> int:
        """Body bytes received and not taken yet."""
        return self._buffered

    def take_body(self) -> list[bytes]:
        """The body bytes received since the last take."""
        body = self._body
        self._body = []
        self._buffered = 0
        return body

    def check(self) -> None:
        """Raises ``UpstreamClosedError`` when the exchange failed or its connection ended."""
        self._check()

    def finish(self) -> None:
        """The caller has what it needs: the connection returns to the pool once the response ended."""
        self._listener = None
        self._release_slot()
        if self._state is not _State.ACTIVE:
            return
        if self._complete:
            self._ended_cleanly()
            return
        # Typically the end of an SSE stream still on its way after the answer event.
        self._state = _State.DRAINING
        self._drain_left = self._pool.limits.drain_bytes - self._buffered
        self._body = []
        if self._drain_left < 0:
            self.close()
            return
        self._drain_timer = self._loop.call_later(self._pool.limits.idle_timeout_secs, self.close)

    def close(self) -> None:
        """Close the connection, whatever its exchange is doing (never pooled again)."""
        self._listener = None
        self._release_slot()
        if self._state is _State.IDLE:
            self._pool._forget(self)
        self._state = _State.CLOSED
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Drop the connection at once, without a TLS goodbye (for a pool that is going away)."""
        self.close()
        if self._transport is not None:
            self._transport.abort()

    # -- the pool's side

    def send(self, request: bytes) -> bool:
        """Write a request; False when the write failed at once, so none of it was sent."""
        self._reset()
        self._state = _State.ACTIVE
        transport = self._transport
        if transport is None or transport.is_closing():
            return False
        transport.write(request)
        # Transports close themselves synchronously when the socket refuses the first send.
        return not transport.is_closing()

    async def head(self) -> None:
        """Wait for the response's status line and headers; raises ``UpstreamClosedError``."""
        while not self._head_done:
            self._check()
            await self._wait()

    def hold_slot(self) -> None:
        self._holds_slot = True

    def _release_slot(self) -> None:
        if self._holds_slot:
            self._holds_slot = False
            self._pool._slots.release()

    async def _wait(self) -> None:
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        listener = self._listener
        if listener is not None:
            listener()
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _check(self) -> None:
        if self._error is not None:
            raise UpstreamClosedError(self._pool.name, self._error)
        if self._state is not _State.ACTIVE or self._transport is None or self._transport.is_closing():
            raise UpstreamClosedError(self._pool.name, "the connection closed before the response ended")

    def _ended_cleanly(self) -> None:
        transport = self._transport
        if self._keep_alive and not self._trailing and transport is not None and not transport.is_closing():
            self._pool._park(self)
        else:
            self.close()

    def _fail(self, error: str) -> None:
        self._error = error
        self._wake()
        self.close()

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without deriving from it.
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._pool._opened(self)

    def data_received(self, data: bytes) -> None:
        state = self._state
        if state is not _State.ACTIVE and state is not _State.DRAINING:
            # Bytes nobody asked for (or after the pool let go): the framing is lost.
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(f"malformed HTTP response: {exc}")
            return
        if self._state is _State.DRAINING and self._complete:
            if self._drain_timer is not None:
                self._drain_timer.cancel()
                self._drain_timer = None
            self._state = _State.ACTIVE
            self._ended_cleanly()

    def eof_received(self) -> bool | None:
        self._ended(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended(exc)
        self._transport = None
        self._pool._lost(self)
        self.closed.set_result(None)

    def _ended(self, exc: Exception | None) -> None:
        state = self._state
        if state is _State.IDLE:
            self.close()
            return
        if state is not _State.ACTIVE and state is not _State.DRAINING:
            return
        if self._head_done and not self._complete and self._until_close():
            # A body without length or chunks ends where the connection does.
            self._complete = True
            self._keep_alive = False
        elif not self._complete and self._error is None:
            reason = f": {exc}" if exc is not None else ""
            self._error = f"the connection closed before the response ended{reason}"
        self._wake()
        if state is _State.DRAINING:
            self.close()

    def _until_close(self) -> bool:
        return self.content_length is None and not self._chunked

    # -- httptools callbacks

    def on_message_begin(self) -> None:
        if self._complete:
            # A second response to one request: the framing cannot be trusted any more.
            self._trailing = True
            raise _TrailingResponseError

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self.media_type = value.split(b";", 1)[0].strip().lower()
        elif name == b"content-length":
            self.content_length = int(value)
        elif name == b"transfer-encoding":
            self._chunked = b"chunked" in value.lower()

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:
            # An interim response (103 Early Hints): the real one follows.
            self.media_type = b""
            self.content_length = None
            self._chunked = False
            return
        self.status = status
        self._keep_alive = self._parser.should_keep_alive()
        self._head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self._state is not _State.ACTIVE:
            if self._state is _State.DRAINING:
                self._drain_left -= len(body)
                if self._drain_left < 0:
                    self.close()
            return
        self._body.append(body)
        self._buffered += len(body)
        self._wake()

    def on_message_complete(self) -> None:
        if not self._head_done:
            return
        self._complete = True
        self._wake()


class Http1Pool:
    """Keep-alive HTTP/1.1 connections to the origin of ``url``, for POSTs to its path.

    ``headers`` go with every request (a caller's header of the same name replaces one of them).
    Must be made and used on one running asyncio loop; ``aclose`` it.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        name: str,
        ssl_context: ssl.SSLContext | None = None,
        limits: PoolLimits | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"not an http:// or https:// URL: {url!r}")
        self.name = name
        self.limits = limits or PoolLimits()
        self.loop = asyncio.get_running_loop()
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = (ssl_context or ssl.create_default_context()) if parts.scheme == "https" else None
        authority = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None:
            authority = f"{authority}:{parts.port}"
        fields = {"host": header_line("Host", authority)}
        if parts.username is not None:
            # Credentials in the URL, as aiohttp took them: basic auth unless a header says otherwise.
            secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            fields["authorization"] = header_line("Authorization", f"Basic {base64.b64encode(secret).decode()}")
        fields |= {name.lower(): header_line(name, value) for name, value in headers.items()}
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if _CONTROL.search(target) or " " in target:
            raise ConfigError(f"the URL's path holds spaces or control characters: {url!r}")
        self._request_line = f"POST {target} HTTP/1.1\r\n"
        self._fields = fields
        self._field_text = "".join(fields.values())
        self._slots = _Slots(self.limits.max_connections)
        self._idle: list[Response] = []
        self._open: set[Response] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closing = False

    @property
    def idle_count(self) -> int:
        """Connections waiting in the pool for the next request."""
        return len(self._idle)

    async def post(self, body: bytes, headers: Mapping[str, str]) -> Response:
        """Send ``body`` with ``headers``; the response once its head arrived.

        The caller reads the body and then ``finish``es or ``close``s the response. Raises
        ``InvalidInputError`` for a header that cannot be sent as given (nothing is sent) and
        ``UpstreamClosedError`` when connecting, sending or receiving the head fails.
        """
        request = self._request(body, headers)
        if self._closing:
            raise UpstreamClosedError(self.name, "the HTTP client is closed")
        await self._slots.acquire()
        try:
            response = await self._exchange(request)
        except BaseException:
            self._slots.release()
            raise
        response.hold_slot()
        return response

    async def _exchange(self, request: bytes) -> Response:
        response = self._take_idle()
        if response is None or not response.send(request):
            if response is not None:
                # The reused socket was already reset; the request did not leave (see the module doc).
                response.close()
            response = await self._connect()
            if not response.send(request):
                response.close()
                raise UpstreamClosedError(self.name, "the connection closed while sending the request")
        try:
            await response.head()
        except BaseException:
            response.close()
            raise
        return response

    def post_now(self, body: bytes, headers: Mapping[str, str]) -> Response | None:
        """``post`` without waiting, when it can: a free slot and an idle connection that took
        the request. Then the response is on its way (read it by callback: ``listen``); else
        None, and nothing was sent. Raises ``InvalidInputError`` as ``post`` does."""
        if self._closing or not self._idle:
            return None
        request = self._request(body, headers)
        if not self._slots.take():
            return None
        response = self._take_idle()
        if response is None or not response.send(request):
            if response is not None:
                response.close()  # the reused socket was already reset: nothing left
            self._slots.release()
            return None
        response.hold_slot()
        return response

    def _request(self, body: bytes, headers: Mapping[str, str]) -> bytes:
        fields = self._field_text
        if headers:
            lines = dict(map(_keyed_header_line, headers.items()))
            if lines.keys() & self._fields.keys():
                fields = "".join((self._fields | lines).values())
            else:
                fields += "".join(lines.values())
        head = f"{self._request_line}{fields}Content-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    async def _connect(self) -> Response:
        try:
            _, response = await self.loop.create_connection(
                lambda: Response(self),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host if self._ssl is not None else None,
            )
        except OSError as exc:
            origin = f"{'https' if self._ssl is not None else 'http'}://{self._host}:{self._port}"
            raise UpstreamClosedError(self.name, f"cannot connect to {origin}: {exc}") from exc
        if self._closing:
            response.close()
            raise UpstreamClosedError(self.name, "the HTTP client is closed")
        return response

    def _take_idle(self) -> Response | None:
        idle = self._idle
        if not idle:
            return None
        expired = self.loop.time() - self.limits.idle_timeout_secs
        while idle:
            response = idle.pop()
            response._state = _State.ACTIVE
            if response.idle_since > expired:
                response.reused = True
                return response
            response.close()
        return None

    def _park(self, response: Response) -> None:
        if self._closing or len(self._idle) >= self.limits.max_idle:
            response.close()
            return
        response._state = _State.IDLE
        response.idle_since = self.loop.time()
        self._idle.append(response)
        if self._sweeper is None:
            self._sweeper = self.loop.call_later(self.limits.idle_timeout_secs, self._sweep)

    def _sweep(self) -> None:
        """Close the connections idle past the timeout; oldest first, at the bottom of the stack."""
        self._sweeper = None
        expired = self.loop.time() - self.limits.idle_timeout_secs + _CLOCK_SLACK
        while self._idle and self._idle[0].idle_since <= expired:
            self._idle[0].close()
        if self._idle:
            when = self._idle[0].idle_since + self.limits.idle_timeout_secs
            self._sweeper = self.loop.call_at(when, self._sweep)

    def _forget(self, response: Response) -> None:
        if response in self._idle:
            self._idle.remove(response)

    def _opened(self, response: Response) -> None:
        self._open.add(response)

    def _lost(self, response: Response) -> None:
        self._open.discard(response)

    async def aclose(self) -> None:
        """Close every connection and wait for them to end; connections left when cancelled are aborted."""
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for response in list(self._open):
            response.close()
        try:
            for response in list(self._open):
                await response.closed
        finally:
            for response in list(self._open):
                response.abort()


class _Slots:
    """At most ``limit`` exchanges at once, in the order they asked; ``take`` one without
    waiting where one is free (a semaphore that can be tried synchronously)."""

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiters: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    async def acquire(self) -> None:
        if self.take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # woken with the slot handed over
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed over as the waiter was cancelled: pass it on
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


@functools.lru_cache(maxsize=1024)
def _keyed_header_line(header: tuple[str, str]) -> tuple[str, str]:
    """(lower-case name, line) of a per-request header. Cached: a tool's calls send the same
    few headers (protocol version, method, tool name) again and again; a header that cannot
    be sent raises each time, as nothing is cached for it."""
    name, value = header
    return name.lower(), header_line(name, value)


def header_line(name: str, value: str) -> str:
    """``name: value`` and CRLF; raises ``InvalidInputError`` when the header could not be sent as given."""
    if not _TOKEN.fullmatch(name):
        raise InvalidInputError(f"header {name!r}", "not a valid HTTP header name")
    if _CONTROL.search(value):
        raise InvalidInputError(f"header {name!r}", "the value holds CR, LF or another control character")
    if name.lower() in _FRAMING:
        raise InvalidInputError(f"header {name!r}", "set by the HTTP client from the body")
    return f"{name}: {value}\r\n"
