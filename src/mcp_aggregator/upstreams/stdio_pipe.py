"""An upstream's stdin/stdout, shared by the SDK session and the raw fast path.

We own the framing instead of using the SDK's ``stdio_client``: its reader re-joins the
buffer on every chunk, which is quadratic in the message size (5/10/20 MB results take
1.0/3.2/10.6 s). Here a line is collected as a list of chunks and joined once, so reading
is linear, and a line longer than ``max_message_bytes`` is discarded as it streams in
(keeping only its head to learn whose answer it was) and fails that one request.

One reader task serves both users of the pipe: a line answering a raw call (its id is one
the fast path minted, ``agw:<n>``) goes to that caller as bytes, untouched; every other
line is parsed for the SDK session. Writes from both are serialised by one lock, and a
message that cannot be encoded fails its own request only.
"""

from __future__ import annotations

import itertools
import logging
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import anyio
import mcp_types as types
import orjson
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError

logger = logging.getLogger(__name__)

RAW_ID_PREFIX: Final = "agw:"
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("agw:\d+"|-?\d+|"(?:[^"\\]|\\.)*")')
_HEAD_BYTES: Final = 4096
_STOP_GRACE_SECS: Final = 2.0
RESULT_TOO_LARGE: Final = -32005
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class ResultTooLargeError(UpstreamCallError):
    """A message from the upstream exceeded ``serve.max_result_bytes``."""


SdkStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
Inbox = MemoryObjectSendStream[SessionMessage | Exception]


@dataclass
class _Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    line: bytes | None = None
    error: Exception | None = None


def message_id(head: bytes) -> str | int | None:
    """The JSON-RPC id near the start of a message, read without parsing the whole of it."""
    match = _ID_IN_HEAD.search(head[:_HEAD_BYTES])
    if match is None:
        return None
    raw = match.group(1)
    return orjson.loads(raw)  # type: ignore[no-any-return]


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
        self._waiters: dict[str, _Waiter] = {}
        self._write_lock = anyio.Lock()
        self._stdin: ByteSendStream | None = None
        self._closed = False
        self._sdk_inbox: MemoryObjectSendStream[SessionMessage | Exception] | None = None

    @asynccontextmanager
    async def open(self, errlog: TextIO = sys.stderr) -> AsyncIterator[SdkStreams]:
        """Start the process; yield the SDK's (read, write) streams; stop it on exit."""
        process = await anyio.open_process(
            [self.params.command, *self.params.args],
            env=get_default_environment() | (self.params.env or {}),
            stderr=subprocess.PIPE,
            cwd=self.params.cwd,
            start_new_session=True,
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

    async def _relay_stderr(self, stderr: ByteReceiveStream, errlog: TextIO) -> None:
        """The server's stderr, line by line, with expanded secrets scrubbed, onto ours."""
        pending = b""
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                chunk = await stderr.receive()
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()[-_HEAD_BYTES:]  # a runaway line keeps only its tail
                for line in lines:
                    text = self._scrub(line.decode(errors="replace"))
                    print(f"[{self.name}] {text}", file=errlog, flush=True)

    async def _read(
        self, stdout: ByteReceiveStream, inbox: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        parts: list[bytes] = []
        size = 0
        head = b""
        too_long = False
        try:
            while True:
                chunk = await stdout.receive()
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
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
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
            waiter = self._waiters.get(ident)
            if waiter is not None:
                waiter.line = line
                waiter.done.set()
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            logger.warning("upstream %s wrote a line that is not JSON-RPC: %s", self.name, str(exc)[:200])
            await inbox.send(exc)
            return
        await inbox.send(SessionMessage(message))

    async def _oversized(self, head: bytes, size: int, inbox: Inbox) -> None:
        text = f"result of {size} bytes exceeds serve.max_result_bytes ({self.max_message_bytes})"
        logger.warning("upstream %s: %s; the call fails, the session stays", self.name, text)
        ident = message_id(head)
        if isinstance(ident, str) and ident in self._waiters:
            waiter = self._waiters[ident]
            waiter.error = ResultTooLargeError(self.name, text, code=RESULT_TOO_LARGE)
            waiter.done.set()
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
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await inbox.aclose()
                return

    async def _send(self, data: bytes) -> None:
        assert self._stdin is not None
        async with self._write_lock:
            await self._stdin.send(data)

    async def call(self, message: dict[str, Any]) -> bytes:
        """Send one JSON-RPC request as it is (its id replaced by a fresh raw id); the answer line, raw.

        Raises ``UpstreamClosedError`` when the pipe ends first, ``ResultTooLargeError``.
        Cancelling the caller sends ``notifications/cancelled`` for the request.
        """
        if self._closed or self._stdin is None:
            raise UpstreamClosedError(self.name, "not connected")
        ident = f"{RAW_ID_PREFIX}{next(self._ids)}"
        message["id"] = ident
        data = orjson.dumps(message) + b"\n"
        waiter = _Waiter()
        self._waiters[ident] = waiter
        try:
            try:
                await self._send(data)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
                raise UpstreamClosedError(self.name, f"writing failed: {exc}") from exc
            await waiter.done.wait()
        except anyio.get_cancelled_exc_class():
            if not waiter.done.is_set() and not self._closed:
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ident}}
                with anyio.CancelScope(shield=True), suppress(*_PIPE_ERRORS):
                    await self._send(orjson.dumps(cancel) + b"\n")
            raise
        finally:
            self._waiters.pop(ident, None)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.line is not None
        return waiter.line

    def _fail_waiters(self, error: Exception) -> None:
        for waiter in list(self._waiters.values()):
            if not waiter.done.is_set():
                waiter.error = error
                waiter.done.set()

    async def _stop(self, process: Process) -> None:
        """Close stdin, give the server a grace period, then end its process group."""
        if self._stdin is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._stdin.aclose()
        with anyio.move_on_after(_STOP_GRACE_SECS):
            await process.wait()
        if process.returncode is None:
            await terminate_posix_process_tree(process, _STOP_GRACE_SECS)
            with anyio.move_on_after(_STOP_GRACE_SECS):
                await process.wait()
        if process.stdout is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdout.aclose()
