"""MCP over this process's stdin and stdout, with the passthrough fast path in front.

The SDK's ``stdio_server`` parses every line into its models, hands it to the server, and
serialises every answer back: for a plain passthrough ``tools/call`` that is most of the
gateway's cost. Here we own the framing (newline-delimited, read as chunks and joined once
per line, so a large message stays linear) and offer each request line to ``FastCalls``
first, in the read callback; what it declines is parsed exactly as the SDK would and goes to
the SDK server, in order (``LineBacklog``), so behaviour is the same either way. A call to a
stdio upstream is answered from that pipe's read callback: no task per call. A
``notifications/cancelled`` for a call the fast path holds cancels that call (which tells
the upstream) and goes no further.

A handshake-era client (Claude Desktop, say) sends its calls without the 2026-07-28
envelope; the face learns what the fast path needs from the handshake passing through it
(the client's capabilities, the version the SDK server agreed, whether the client asked
for log messages), and offers that session's calls too once nothing in it needs the full
pipeline.

As the SDK does, fds 0 and 1 are pointed at the null device and at stderr while we serve
from private duplicates: a stray ``print`` or a child that inherits them cannot corrupt the
protocol stream. Where stdin or stdout is not a pipe, socket or terminal (a regular file),
asyncio cannot watch it, and the SDK's own thread-based transport is used instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Final, get_args

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_aggregator.line_backlog import LineBacklog
from mcp_aggregator.line_batch import LineBatch
from mcp_aggregator.serve.fast_call import (
    FAST_METHODS,
    FastCalls,
    FastPlan,
    Withdrawable,
    asks_mid_call,
    log_notification,
)
from mcp_aggregator.serve.fast_call import SETTLED as _SETTLED
from mcp_aggregator.upstreams.stdio_pipe import notification_params

logger = logging.getLogger(__name__)

Inbox = MemoryObjectSendStream[SessionMessage | Exception]
SdkStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
_CANCELLED: Final = b"notifications/cancelled"
_LOG_LEVELS: Final = frozenset(get_args(types.LoggingLevel))


@dataclass
class _Handshake:
    """What the face saw of a handshake-era session's set-up."""

    request_id: Any
    capabilities_ask: bool
    """The client declared a capability an upstream may use mid-call (then it is never fast)."""
    version: str | None = None
    initialized: bool = False
    log_level: str | None = None
    """The level the client set with ``logging/setLevel`` (None: every level)."""

    @property
    def fast_version(self) -> str | None:
        """The version to answer fast calls for, or None while the session is not eligible."""
        if not self.initialized or self.capabilities_ask:
            return None
        return self.version


@contextlib.asynccontextmanager
async def stdio_streams(calls: FastCalls | None) -> AsyncIterator[SdkStreams]:
    """The SDK server's (read, write) streams over stdin/stdout, with ``calls`` answering
    what it takes directly. Falls back to the SDK's transport where asyncio cannot watch
    the descriptors."""
    if not (_watchable(0) and _watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    with _claimed(0) as stdin, _claimed(1) as stdout:
        async with pipe_streams(calls, stdin, stdout) as streams:
            yield streams


def pipe_streams(
    calls: FastCalls | None, stdin: BinaryIO, stdout: BinaryIO
) -> contextlib.AbstractAsyncContextManager[SdkStreams]:
    """As ``stdio_streams``, over any pair of pipes (closed on exit)."""
    return _StdioFace(calls, stdin, stdout).streams()


def _watchable(fd: int) -> bool:
    """A pipe or socket. Not a terminal: asyncio would make it non-blocking, which the
    shell sharing it would inherit; an interactive session does not need the speed."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _claimed(fd: int) -> Iterator[BinaryIO]:
    """A private duplicate of ``fd`` to serve from, with ``fd`` itself diverted meanwhile
    (stdin to the null device, stdout to stderr) and restored afterwards, blocking again."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    diversion = os.open(os.devnull, os.O_RDONLY) if fd == 0 else os.dup(2)
    try:
        os.dup2(diversion, fd)
    finally:
        os.close(diversion)
    # asyncio closes what it is given; ``private`` must outlive it to restore ``fd``.
    stream = os.fdopen(fcntl.fcntl(private, fcntl.F_DUPFD_CLOEXEC, 3), "rb" if fd == 0 else "wb", buffering=0)
    try:
        yield stream
    finally:
        stream.close()
        with contextlib.suppress(OSError):
            os.set_blocking(private, True)
        os.dup2(private, fd)
        os.close(private)


class _Intake(asyncio.Protocol):
    """The client's bytes to the face as they arrive: no reader task to wake per line."""

    def __init__(self, face: _StdioFace) -> None:
        self._face = face

    def data_received(self, data: bytes) -> None:
        self._face._received(data)

    def eof_received(self) -> None:
        self._face._ended()

    def connection_lost(self, exc: Exception | None) -> None:
        self._face._ended()


class _StdioFace:
    def __init__(self, calls: FastCalls | None, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self._calls = calls if calls is not None and calls.enabled else None
        self._stdin = stdin
        self._stdout = stdout
        self._writer: asyncio.StreamWriter | None = None
        self._closed = False
        self._in_flight: dict[Any, asyncio.Task[None] | Withdrawable] = {}
        """Fast calls by client id: a task awaiting the answer, or a call answered by callback."""
        self._handshake: _Handshake | None = None
        self._outgoing = LineBatch(self._write_now)
        self._read_transport: asyncio.ReadTransport | None = None
        self._parts: list[bytes] = []
        """The start of a line still arriving, in chunks (joined once: linear in its size)."""
        self._backlog = LineBacklog[bytes](len, self._pause_input, self._resume_input)
        """Lines waiting for the SDK server, with any that came in behind them."""
        self._input_ended = False

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[SdkStreams]:
        loop = asyncio.get_running_loop()
        read_transport, _ = await loop.connect_read_pipe(lambda: _Intake(self), self._stdin)
        self._read_transport = read_transport
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, self._stdout)
        self._writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        inbox_send, inbox = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbox, outbox_receive = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._forward, inbox_send)
                tg.start_soon(self._write_sdk, outbox_receive)
                try:
                    yield inbox, outbox
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._give_up_all()
            tasks = [pending for pending in self._in_flight.values() if isinstance(pending, asyncio.Task)]
            if tasks:
                await asyncio.wait(tasks)
            read_transport.close()
            self._outgoing.flush()
            with contextlib.suppress(OSError, RuntimeError):
                await self._writer.drain()
            write_transport.close()
            for stream in (inbox_send, inbox, outbox, outbox_receive):
                await stream.aclose()

    # -- reading: lines are taken as the bytes arrive, in the read callback -----------------

    def _received(self, chunk: bytes) -> None:
        parts = self._parts
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if parts:
                parts.append(chunk[start:end])
                line = b"".join(parts)
                parts.clear()
            else:
                line = chunk[start:end]
            start = end + 1
            # Lines are taken in order: behind one waiting for the SDK, the rest wait too.
            if self._backlog or not self._took(line):
                self._backlog.add(line)
        if start < len(chunk):
            parts.append(chunk[start:])

    def _ended(self) -> None:
        if self._input_ended:
            return
        self._input_ended = True
        if self._parts:
            line = b"".join(self._parts)
            self._parts.clear()
            if self._backlog or not self._took(line):
                self._backlog.add(line)
        self._backlog.end()

    def _pause_input(self) -> None:
        if self._read_transport is not None:
            self._read_transport.pause_reading()

    def _resume_input(self) -> None:
        if self._read_transport is not None:
            self._read_transport.resume_reading()

    def _took(self, line: bytes) -> bool:
        """Whether ``line`` is dealt with here and now: a blank line, a fast call (sent on its
        way), the cancellation of one. Every other line goes to the SDK, parsed (and a bug
        met on the way sends it there too, instead of ending the face)."""
        try:
            return self._took_here(line)
        except Exception:
            logger.exception("the fast path failed on a line; the SDK server takes it")
            return False

    def _took_here(self, line: bytes) -> bool:
        if not line or line.isspace():
            return True
        if self._calls is not None and any(method in line for method in FAST_METHODS):
            handshake = self._handshake
            version = handshake.fast_version if handshake is not None else None
            level = handshake.log_level if handshake is not None else None
            plan = self._calls.plan(line, handshake_version=version, log_level=level)
            if plan is not None and plan.client_id not in self._in_flight:
                self._start(plan)
                return True
        return bool(self._in_flight) and _CANCELLED in line and self._cancelled_here(line)

    async def _forward(self, inbox: Inbox) -> None:
        """Hand the queued lines to the SDK server, in order (a fast call queued behind an SDK
        line is still fast when its turn comes)."""
        async with inbox:
            await self._backlog.run(self._took, lambda line: self._to_sdk(line, inbox))
        # End of input: the client is gone, and so is whoever waited for these answers.
        self._give_up_all()

    def _give_up_all(self) -> None:
        for ident in list(self._in_flight):
            self._give_up(ident)

    def _give_up(self, ident: Any) -> None:
        """No answer for this call any more: its task is cancelled (and leaves the table when
        it ends), a callback call is withdrawn at once. Either way the upstream is told."""
        pending = self._in_flight.get(ident)
        if isinstance(pending, asyncio.Task):
            pending.cancel()
        elif pending is not None:
            del self._in_flight[ident]
            pending.withdraw()

    async def _to_sdk(self, line: bytes, inbox: Inbox) -> None:
        text = line.decode("utf-8", errors="replace")  # as the SDK's reader decodes stdin
        try:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError as exc:
            await inbox.send(exc)
            return
        if self._calls is not None:
            self._observe(message)
        await inbox.send(SessionMessage(message))

    def _observe(self, message: types.JSONRPCMessage) -> None:
        """Follow a handshake-era session's set-up (see the module docstring)."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method == "initialize":
                params = message.params or {}
                asks = asks_mid_call(params.get("capabilities"))
                self._handshake = _Handshake(message.id, capabilities_ask=asks)
            elif message.method == "logging/setLevel" and self._handshake is not None:
                level = (message.params or {}).get("level")
                if level in _LOG_LEVELS:  # the SDK refuses any other, and nothing changes
                    self._handshake.log_level = level
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/initialized"
            and self._handshake is not None
        ):
            self._handshake.initialized = True

    def _agreed(self, message: types.JSONRPCMessage) -> None:
        """The version the SDK server agreed in its answer to ``initialize``."""
        handshake = self._handshake
        if (
            handshake is not None
            and isinstance(message, types.JSONRPCResponse)
            and message.id == handshake.request_id
            and isinstance(message.result, dict)
        ):
            version = message.result.get("protocolVersion")
            handshake.version = version if version in HANDSHAKE_PROTOCOL_VERSIONS else None

    def _cancelled_here(self, line: bytes) -> bool:
        """Whether ``line`` cancels a call the fast path holds (then it has been cancelled)."""
        params = notification_params(line, "notifications/cancelled")
        ident = params.get("requestId") if params is not None else None
        if not isinstance(ident, str | int) or ident not in self._in_flight:
            return False
        self._give_up(ident)
        return True

    def _start(self, plan: FastPlan) -> None:
        """Send a fast call on its way. Over a stdio upstream it is answered from the pipe
        reader's callback, with no task at all; otherwise by a bare asyncio task (an anyio
        task per call costs five times as much), which the face tracks and cancels itself,
        and awaits when it closes."""
        assert self._calls is not None
        client_id = plan.client_id
        on_log = self._log_to_client if plan.handshake_version is not None else None
        self._in_flight[client_id] = _SETTLED  # before it can be answered, below

        def deliver(answer: bytes) -> None:
            self._outgoing.add(answer + b"\n", alone=len(self._in_flight) <= 1)
            self._in_flight.pop(client_id, None)

        try:
            call = self._calls.answer_soon(plan, deliver, on_log)
        except Exception:
            self._in_flight.pop(client_id, None)
            raise
        if call is None:
            self._in_flight[client_id] = asyncio.ensure_future(self._fast(plan))
        elif client_id in self._in_flight:
            self._in_flight[client_id] = call

    async def _fast(self, plan: FastPlan) -> None:
        assert self._calls is not None
        try:
            on_log = self._log_to_client if plan.handshake_version is not None else None
            try:
                answer = await self._calls.answer(plan, on_log)
            except asyncio.CancelledError:
                return  # the client cancelled it, or left: nobody to answer
            except Exception:
                # One call's failure must not end the face and every other client's calls.
                logger.exception("%s failed", plan.label)
                answer = self._calls.internal_error(plan)
            await self._send(answer + b"\n")
        finally:
            self._in_flight.pop(plan.client_id, None)

    def _log_to_client(self, params: dict[str, Any]) -> None:
        """An upstream's log message during a fast call, relayed as the full pipeline relays it
        to a handshake-era client (queued now, so it leaves before the call's answer)."""
        line = log_notification(params, self._handshake.log_level if self._handshake is not None else None)
        if line is not None and not self._closed:
            self._outgoing.add(line + b"\n", alone=False)

    async def _write_sdk(self, outbox: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async for session_message in outbox:
            if self._handshake is not None and self._handshake.version is None:
                self._agreed(session_message.message)
            data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
            await self._send(data.encode() + b"\n")

    async def _send(self, data: bytes) -> None:
        """Write whole lines, so fast-path and SDK lines never interleave. With several calls
        in flight, lines are queued for one write at the end of this turn of the loop:
        answers that arrived together leave together, one system call and one wake-up of
        the client for all of them. A lone call's answer is written at once."""
        assert self._writer is not None
        if self._closed:
            return
        self._outgoing.add(data, alone=len(self._in_flight) <= 1)
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError):
            self._closed = True

    def _write_now(self, data: bytes) -> None:
        if self._closed or self._writer is None:
            return
        try:
            self._writer.write(data)
        except (ConnectionError, RuntimeError):
            # The client closed its end; its input ends too, and that stops the face.
            self._closed = True
