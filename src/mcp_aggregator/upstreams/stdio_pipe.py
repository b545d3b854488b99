"""An upstream's stdin/stdout, shared by the SDK session and the raw fast path.

We own the framing instead of using the SDK's ``stdio_client``: its reader re-joins the
buffer on every chunk, which is quadratic in the message size (5/10/20 MB results take
1.0/3.2/10.6 s). Here a line is collected as a list of chunks and joined once, so reading
is linear, and a line longer than ``max_message_bytes`` is discarded as it streams in
(keeping only its head to learn whose answer it was) and fails that one request.

One reader task serves both users of the pipe: a line answering a raw call (its id is one
the fast path minted, ``agw:<n>``) goes to that caller as bytes, untouched; every other
line is parsed for the SDK session. Each message is one synchronous write, so messages
from both never interleave, and one that cannot be encoded fails its own request only.

The process and its pipes are asyncio's own (the gateway runs on asyncio): anyio's stream
wrappers and locks add two trips through the event loop to every write, which on the hot
path cost more than the write.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, TextIO

import anyio
import mcp_types as types
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError
from mcp_aggregator.line_batch import LineBatch

logger = logging.getLogger(__name__)

RAW_ID_PREFIX: Final = "agw:"
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("agw:\d+"|-?\d+|"(?:[^"\\]|\\.)*")')
_HEAD_BYTES: Final = 4096
_LOG_METHOD: Final = b'"notifications/message"'
_STOP_GRACE_SECS: Final = 2.0
RESULT_TOO_LARGE: Final = -32005
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError)
_READ_CHUNK: Final = 1 << 16


class ResultTooLargeError(UpstreamCallError):
    """A message from the upstream exceeded ``serve.max_result_bytes``."""


SdkStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
Inbox = MemoryObjectSendStream[SessionMessage | Exception]
LogSink = Callable[[dict[str, Any]], None]
"""Takes the params of a log message an upstream sent while a raw call ran."""
Settle = Callable[[bytes | Exception], None]
"""Takes a raw call's outcome: the answer line, untouched, or the error that ended it."""


def message_id(head: bytes) -> str | int | None:
    """The JSON-RPC id near the start of a message, read without parsing the whole of it."""
    match = _ID_IN_HEAD.search(head[:_HEAD_BYTES])
    if match is None:
        return None
    raw = match.group(1)
    return orjson.loads(raw)  # type: ignore[no-any-return]


def notification_params(line: bytes, method: str) -> dict[str, Any] | None:
    """The params of ``line`` when it is a ``method`` notification with object params, else None."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.get("method") != method:
        return None
    params = message.get("params")
    return params if isinstance(params, dict) else None


class StdioPipe:
    """One upstream process; ``open()`` it once (in the connection's task), then ``call`` raw."""

    def __init__(
        self,
        params: StdioServerParameters,
        *,
        name: str,
        max_message_bytes: int,
        scrub: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.params = params
        self._scrub = scrub
        self.name = name
        self.max_message_bytes = max_message_bytes
        self._ids = itertools.count(1)
        self._waiters: dict[str, Settle] = {}
        self._log_sinks: dict[str, LogSink] = {}
        """Raw calls whose caller takes the server's log messages, oldest first."""
        self._stdin: asyncio.StreamWriter | None = None
        self._closed = False
        self._sdk_inbox: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._outgoing = LineBatch(self._write_now)

    @asynccontextmanager
    async def open(self, errlog: TextIO = sys.stderr) -> AsyncIterator[SdkStreams]:
        """Start the process; yield the SDK's (read, write) streams; stop it on exit."""
        process = await asyncio.create_subprocess_exec(
            self.params.command,
            *self.params.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=get_default_environment() | (self.params.env or {}),
            cwd=self.params.cwd,
            start_new_session=True,
            limit=_READ_CHUNK,
        )
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        inbox_send, inbox = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbox, outbox_receive = anyio.create_memory_object_stream[SessionMessage](0)
        self._sdk_inbox = inbox_send
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, process.stdout, inbox_send)
                if process.stderr is not None:
                    tg.start_soon(self._relay_stderr, process.stderr, errlog)
                tg.start_soon(self._write_sdk, outbox_receive, inbox_send)
                try:
                    yield inbox, outbox
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(process)
                    tg.cancel_scope.cancel()
        finally:
            self._closed = True
            self._fail_waiters(UpstreamClosedError(self.name, "the server process ended"))
            for stream in (inbox_send, inbox, outbox, outbox_receive):
                await stream.aclose()

    # -- reading ------------------------------------------------------------------------

    async def _relay_stderr(self, stderr: asyncio.StreamReader, errlog: TextIO) -> None:
        """The server's stderr, line by line, with expanded secrets scrubbed, onto ours."""
        pending = b""
        with suppress(OSError):
            while chunk := await stderr.read(_READ_CHUNK):
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()[-_HEAD_BYTES:]  # a runaway line keeps only its tail
                for line in lines:
                    text = self._scrub(line.decode(errors="replace"))
                    print(f"[{self.name}] {text}", file=errlog, flush=True)

    async def _read(
        self, stdout: asyncio.StreamReader, inbox: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        parts: list[bytes] = []
        size = 0
        head = b""
        too_long = False
        try:
            while chunk := await stdout.read(_READ_CHUNK):
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    piece = chunk[start:end]
                    start = end + 1
                    if too_long:
                        await self._oversized(head, size + len(piece), inbox)
                    else:
                        parts.append(piece)
                        await self._line(b"".join(parts), inbox)
                    parts, size, head, too_long = [], 0, b"", False
                rest = chunk[start:]
                if not rest:
                    continue
                size += len(rest)
                if too_long:
                    continue
                parts.append(rest)
                if size > self.max_message_bytes:
                    head = b"".join(parts)[:_HEAD_BYTES]
                    parts, too_long = [], True
        except OSError:
            pass
        finally:
            self._fail_waiters(UpstreamClosedError(self.name, "the server closed its output"))
            await inbox.aclose()

    async def _line(self, line: bytes, inbox: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        if not line.strip():
            return
        if len(line) > self.max_message_bytes:
            await self._oversized(line[:_HEAD_BYTES], len(line), inbox)
            return
        ident = message_id(line)
        if isinstance(ident, str) and ident.startswith(RAW_ID_PREFIX):
            settle = self._waiters.pop(ident, None)
            self._log_sinks.pop(ident, None)
            if settle is not None:
                settle(line)
            return
        if self._log_sinks and _LOG_METHOD in line and self._logged(line):
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            logger.warning("upstream %s wrote a line that is not JSON-RPC: %s", self.name, str(exc)[:200])
            await inbox.send(exc)
            return
        await inbox.send(SessionMessage(message))

    def _logged(self, line: bytes) -> bool:
        """Hand a log message to the newest raw call that takes them (before its answer, which
        this reader has not read yet). Stdio carries no request correlation: with one call in
        flight, the common case, that is exact, as for the SDK session's own calls."""
        params = notification_params(line, "notifications/message")
        if params is None:
            return False
        sink = next(reversed(self._log_sinks.values()))
        sink(params)
        return True

    async def _oversized(self, head: bytes, size: int, inbox: Inbox) -> None:
        text = f"result of {size} bytes exceeds serve.max_result_bytes ({self.max_message_bytes})"
        logger.warning("upstream %s: %s; the call fails, the session stays", self.name, text)
        ident = message_id(head)
        if isinstance(ident, str) and ident in self._waiters:
            self._log_sinks.pop(ident, None)
            self._waiters.pop(ident)(ResultTooLargeError(self.name, text, code=RESULT_TOO_LARGE))
        elif ident is not None:
            data = types.ErrorData(code=RESULT_TOO_LARGE, message=text)
            await inbox.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=data)))

    # -- writing ------------------------------------------------------------------------

    async def _write_sdk(
        self,
        outbox: MemoryObjectReceiveStream[SessionMessage],
        inbox: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async for session_message in outbox:
            message = session_message.message
            try:
                data = (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
            except (UnicodeEncodeError, ValueError) as exc:
                # Fail this request only: the pipe and every other call on it stay up.
                ident = getattr(message, "id", None)
                if ident is not None:
                    error = types.ErrorData(code=types.INVALID_PARAMS, message=f"cannot encode the request: {exc}")
                    await inbox.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=error)))
                continue
            try:
                await self._send(data)
            except _PIPE_ERRORS:
                await inbox.aclose()
                return

    async def _send(self, data: bytes) -> None:
        """Write whole messages, so they never interleave. With several raw calls in flight,
        messages are queued for one write at the end of this turn of the loop: requests that
        came in together reach the server in one read. A lone call's request is written at
        once. Then wait only if the pipe's buffer is full."""
        assert self._stdin is not None
        self._outgoing.add(data, alone=len(self._waiters) <= 1)
        await self._stdin.drain()

    def _write_now(self, data: bytes) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            with suppress(*_PIPE_ERRORS):
                self._stdin.write(data)

    def submit(self, message: dict[str, Any], settle: Settle, on_log: LogSink | None = None) -> str:
        """Send one JSON-RPC request as it is (its id replaced by a fresh raw id) and return
        that id; ``settle`` gets the answer line, raw, from the reader, or the error that ends
        the call (``UpstreamClosedError``, ``ResultTooLargeError``), exactly once unless the
        call is withdrawn first. ``on_log`` takes the params of the server's log messages
        while the call runs. Nothing here waits: the fast path answers from callbacks, with
        no task per call. Raises ``UpstreamClosedError`` when the pipe is not open.
        """
        if self._closed or self._stdin is None or self._stdin.is_closing():
            raise UpstreamClosedError(self.name, "not connected")
        ident = f"{RAW_ID_PREFIX}{next(self._ids)}"
        message["id"] = ident
        data = orjson.dumps(message) + b"\n"
        self._waiters[ident] = settle
        if on_log is not None:
            self._log_sinks[ident] = on_log
        self._outgoing.add(data, alone=len(self._waiters) <= 1)
        return ident

    def withdraw(self, ident: str) -> None:
        """Give up on a raw call: it will not be settled, and the server is told with
        ``notifications/cancelled`` if it has not answered yet."""
        if self._waiters.pop(ident, None) is None:
            return
        self._log_sinks.pop(ident, None)
        if self._closed or self._stdin is None:
            return
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ident}}
        # Behind anything queued, which may hold the request it cancels; synchronous, so a
        # cancelled caller never waits on the pipe.
        self._outgoing.flush()
        with suppress(*_PIPE_ERRORS):
            self._stdin.write(orjson.dumps(cancel) + b"\n")

    async def call(self, message: dict[str, Any], on_log: LogSink | None = None) -> bytes:
        """``submit`` awaited: the answer line, raw. Waits while the pipe's buffer is full.

        Raises ``UpstreamClosedError`` when the pipe ends first, ``ResultTooLargeError``.
        Cancelling the caller withdraws the call (the server is told).
        """
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        def settle(outcome: bytes | Exception) -> None:
            if waiter.done():
                return
            if isinstance(outcome, bytes):
                waiter.set_result(outcome)
            else:
                waiter.set_exception(outcome)

        ident = self.submit(message, settle, on_log)
        try:
            try:
                assert self._stdin is not None
                await self._stdin.drain()
            except _PIPE_ERRORS as exc:
                raise UpstreamClosedError(self.name, f"writing failed: {exc}") from exc
            return await waiter
        finally:
            self.withdraw(ident)  # a no-op once settled

    def _fail_waiters(self, error: Exception) -> None:
        waiters, self._waiters = self._waiters, {}
        self._log_sinks.clear()
        for settle in waiters.values():
            settle(error)

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        """Close stdin, give the server a grace period, then end its process group."""
        if self._stdin is not None:
            self._outgoing.flush()
            with suppress(*_PIPE_ERRORS):
                self._stdin.close()
        with anyio.move_on_after(_STOP_GRACE_SECS):
            await process.wait()
        if process.returncode is None:
            await _end_group(process)

    def __repr__(self) -> str:
        return f"StdioPipe({self.name!r})"


async def _end_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the server's process group (it leads one: ``start_new_session``), SIGKILL
    it after the grace period, and reap the leader."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with anyio.move_on_after(_STOP_GRACE_SECS):
            await process.wait()
            return
