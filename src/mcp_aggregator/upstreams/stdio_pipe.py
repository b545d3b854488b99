"""An upstream's stdin/stdout, shared by the SDK session and the raw fast path.

We own the framing instead of using the SDK's ``stdio_client``: its reader re-joins the
buffer on every chunk, which is quadratic in the message size (5/10/20 MB results take
1.0/3.2/10.6 s). Here a line is collected as a list of chunks and joined once, so reading
is linear, and a line longer than ``max_message_bytes`` is discarded as it streams in
(keeping only its head to learn whose answer it was) and fails that one request.

One reader serves both users of the pipe, in the read callback as the bytes arrive (no
task to wake per line): a line answering a raw call (its id is one the fast path minted,
``agw:<n>``) settles that call with its bytes, untouched; every other line waits its turn
for the SDK session, parsed (``LineBacklog``). Each message is one synchronous write, so
messages from both never interleave, and one that cannot be encoded fails its own request
only.

The process is started from a worker thread (``child_process``: no fork of the gateway in
the event loop) and its pipes are asyncio's own (the gateway runs on asyncio), driven through
a subprocess protocol: anyio's stream wrappers and locks add two trips through the event loop
to every write, and a stream reader one more to every read, which on the hot path cost more
than the system calls.
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
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any, Final, TextIO, cast

import anyio
import mcp_types as types
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from mcp_aggregator.errors import UpstreamCallError, UpstreamClosedError
from mcp_aggregator.line_backlog import LineBacklog
from mcp_aggregator.line_batch import LineBatch
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch, Spawn
from mcp_aggregator.upstreams.child_process import spawn_child
from mcp_aggregator.upstreams.stderr_tail import StderrTail

logger = logging.getLogger(__name__)

RAW_ID_PREFIX: Final = "agw:"
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("agw:\d+"|-?\d+|"(?:[^"\\]|\\.)*")')
_HEAD_BYTES: Final = 4096
_LOG_METHOD: Final = b'"notifications/message"'
_STOP_GRACE_SECS: Final = 2.0
_STDERR_DRAIN_SECS: Final = 0.5
RESULT_TOO_LARGE: Final = -32005
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError)


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
    try:
        return orjson.loads(match.group(1))  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:
        return None  # a string with a bad escape: no id anyone is waiting for


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
        launch: SandboxLaunch | None = None,
    ) -> None:
        self.params = params
        self.launch = launch
        """The server's sandbox, or None to start it as the gateway's own child."""
        self.sandbox_error: str | None = None
        """bwrap's own first error line (``bwrap: ...``), when the sandbox could not be set up."""
        self.limit_hit: str | None = None
        """The sandbox limit that ended the server (``memory``, ``processes``, ``cpu``), once it did."""
        self.stderr = StderrTail()
        """The last lines of the server's stderr, scrubbed."""
        self._scrub = scrub
        self.name = name
        self.max_message_bytes = max_message_bytes
        self._ids = itertools.count(1)
        self._waiters: dict[str, Settle] = {}
        self._log_sinks: dict[str, LogSink] = {}
        """Raw calls whose caller takes the server's log messages, oldest first."""
        self._process: _ServerProcess | None = None
        self.pid: int | None = None
        """The server process's id, once started."""
        self._stdin: asyncio.WriteTransport | None = None
        self._closed = False
        self._outgoing = LineBatch(self._write_now)
        # The line arriving in chunks: its pieces (joined once), size, head once too long.
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._too_long = False
        self._backlog = LineBacklog[bytes | _Oversized](_backlog_size, self._pause_output, self._resume_output)
        """Lines waiting for the SDK session, with any that came in behind them."""
        self._gone = anyio.Event()
        self.gone_reason: str | None = None
        """Why the server is gone (its output closed, or its process exited), once it is."""

    @asynccontextmanager
    async def open(self, errlog: TextIO = sys.stderr) -> AsyncIterator[SdkStreams]:
        """Start the process (in its sandbox, when it has one); yield the SDK's (read,
        write) streams; stop it on exit. Raises ``SandboxError`` when the sandbox cannot
        be set up (nothing is left running)."""
        launch = self.launch
        if launch is None:
            env = get_default_environment() | (self.params.env or {})
            spawning: AbstractAsyncContextManager[Spawn] = nullcontext(
                Spawn((self.params.command, *self.params.args), env, _text(self.params.cwd))
            )
        else:
            spawning = launch.running()
        async with spawning as spawn:
            # Shielded: asyncio, cancelled while it connects the pipes, closes the transport
            # but goes on connecting stdout and stderr, which then leak. The start is short;
            # a cancellation lands just after it, where the process is ended below.
            with anyio.CancelScope(shield=True):
                transport, process = await spawn_child(
                    lambda: _ServerProcess(self, errlog),
                    spawn.argv,
                    env=spawn.env,
                    cwd=spawn.cwd,
                    pass_fds=spawn.pass_fds,
                )
            self._process = process
            self.pid = transport.get_pid()
            if launch is not None:
                try:
                    await launch.release()
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await _end_group(transport.get_pid(), process)
                    transport.close()
                    raise
            async with self._session(transport, process) as streams:
                yield streams

    @asynccontextmanager
    async def _session(
        self, transport: asyncio.SubprocessTransport, process: _ServerProcess
    ) -> AsyncIterator[SdkStreams]:
        # uvloop's pipe transports implement asyncio's without deriving from them.
        self._stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        inbox_send, inbox = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbox, outbox_receive = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._forward, inbox_send)
                tg.start_soon(self._write_sdk, outbox_receive, inbox_send)
                try:
                    yield inbox, outbox
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(transport, process)
                    tg.cancel_scope.cancel()
        finally:
            self._closed = True
            transport.close()
            self._fail_waiters(UpstreamClosedError(self.name, "the server process ended"))
            for stream in (inbox_send, inbox, outbox, outbox_receive):
                await stream.aclose()

    # -- reading: lines are taken as the bytes arrive, in the read callback -----------------

    def _received(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            piece = chunk[start:end]
            start = end + 1
            if self._too_long:
                self._arrived(_Oversized(self._head, self._size + len(piece)))
            elif self._parts:
                self._parts.append(piece)
                self._arrived(b"".join(self._parts))
            else:
                self._arrived(piece)
            self._parts, self._size, self._head, self._too_long = [], 0, b"", False
        rest = chunk[start:]
        if not rest:
            return
        self._size += len(rest)
        if self._too_long:
            return
        self._parts.append(rest)
        if self._size > self.max_message_bytes:
            # Discarded as it streams in: only the head is kept, to learn whose answer it was.
            self._head = b"".join(self._parts)[:_HEAD_BYTES]
            self._parts, self._too_long = [], True

    def _arrived(self, line: bytes | _Oversized) -> None:
        if isinstance(line, bytes) and len(line) > self.max_message_bytes:
            line = _Oversized(line[:_HEAD_BYTES], len(line))
        # Lines are taken in order: behind one waiting for the SDK session, the rest wait too.
        if self._backlog or not self._took(line):
            self._backlog.add(line)

    def _ended(self) -> None:
        self._backlog.end()
        self._went("the server closed its output")

    def _went(self, reason: str) -> None:
        if self.gone_reason is None:
            if self.launch is not None:
                code = self._process.returncode() if self._process is not None else None
                self.limit_hit = self.launch.hit(code)
                if self.limit_hit is not None:
                    reason = f"{reason}: it exceeded its sandbox's {self.limit_hit} limit"
            self.gone_reason = reason
            self._gone.set()

    def _note_exit(self, code: int | None) -> None:
        """The process exited: now its status (and cgroup's counters) say if a limit ended it."""
        if self.launch is not None and self.limit_hit is None:
            self.limit_hit = self.launch.hit(code)

    async def wait_gone(self) -> str:
        """Return, with the reason, as soon as the server's output closes or its process exits.

        The supervisor waits on this so that a killed or crashed server is replaced at once,
        whether or not a call was running on it.
        """
        await self._gone.wait()
        assert self.gone_reason is not None
        return self.gone_reason

    def _pause_output(self) -> None:
        if self._process is not None:
            self._process.pause_output()

    def _resume_output(self) -> None:
        if self._process is not None:
            self._process.resume_output()

    def _took(self, line: bytes | _Oversized) -> bool:
        """Whether ``line`` is dealt with here and now: a raw call's answer (settled, its bytes
        untouched), a log message for a raw call's caller, a blank line. Everything else is
        for the SDK session."""
        if isinstance(line, _Oversized):
            return self._oversized_here(line)
        if not line or line.isspace():
            return True
        ident = message_id(line)
        if isinstance(ident, str) and ident.startswith(RAW_ID_PREFIX):
            settle = self._waiters.pop(ident, None)
            self._log_sinks.pop(ident, None)
            if settle is not None:
                settle(line)
            return True
        return bool(self._log_sinks) and _LOG_METHOD in line and self._logged(line)

    async def _forward(self, inbox: Inbox) -> None:
        """Hand the queued lines to the SDK session, in order (a raw answer queued behind an
        SDK line is settled when its turn comes)."""
        try:
            await self._backlog.run(self._took, lambda line: self._to_sdk(line, inbox))
        finally:
            self._fail_waiters(UpstreamClosedError(self.name, "the server closed its output"))
            await inbox.aclose()

    async def _to_sdk(self, line: bytes | _Oversized, inbox: Inbox) -> None:
        if isinstance(line, _Oversized):
            logger.warning("upstream %s: %s; the call fails, the session stays", self.name, self._too_large(line))
            ident = message_id(line.head)
            if ident is not None:
                data = types.ErrorData(code=RESULT_TOO_LARGE, message=self._too_large(line))
                await inbox.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=data)))
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

    def _too_large(self, line: _Oversized) -> str:
        return f"result of {line.size} bytes exceeds serve.max_result_bytes ({self.max_message_bytes})"

    def _oversized_here(self, line: _Oversized) -> bool:
        """Fail the raw call an oversized line answered (True), or leave it to the SDK session
        (False) when it answers one of the session's requests. A line with no id is dropped."""
        ident = message_id(line.head)
        if ident is None or (isinstance(ident, str) and ident in self._waiters):
            text = self._too_large(line)
            logger.warning("upstream %s: %s; the call fails, the session stays", self.name, text)
            if ident is not None:
                assert isinstance(ident, str)
                self._log_sinks.pop(ident, None)
                self._waiters.pop(ident)(ResultTooLargeError(self.name, text, code=RESULT_TOO_LARGE))
            return True
        return False

    def _relay_stderr(self, pending: bytes, chunk: bytes, errlog: TextIO) -> bytes:
        """The server's stderr, line by line, with expanded secrets scrubbed, onto ours; what
        is left of an unfinished line is returned (a runaway line keeps only its tail)."""
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()[-_HEAD_BYTES:]
        for line in lines:
            self._stderr_line(line, errlog)
        return pending

    def _stderr_line(self, line: bytes, errlog: TextIO) -> None:
        text = self._scrub(line.decode(errors="replace"))
        self.stderr.add(text)
        if self.sandbox_error is None and self.launch is not None and text.startswith("bwrap: "):
            self.sandbox_error = text
        with suppress(OSError, ValueError):
            print(f"[{self.name}] {text}", file=errlog, flush=True)

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
        self._outgoing.add(data, alone=len(self._waiters) <= 1)
        await self._drain()

    async def _drain(self) -> None:
        """Wait while the server's stdin is full; raises ``BrokenPipeError`` once it is closed."""
        process = self._process
        if process is None or self._stdin is None or self._stdin.is_closing():
            raise BrokenPipeError("the server's stdin is closed")
        await process.writable()

    def _write_now(self, data: bytes) -> None:
        stdin = self._stdin
        if stdin is not None and not stdin.is_closing():
            try:  # not ``suppress``: this runs once per call, and a context manager shows
                stdin.write(data)
            except _PIPE_ERRORS as exc:
                # The server is going: its output ends too, and that fails what waits on it.
                logger.debug("upstream %s: writing failed: %s", self.name, exc)

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
                await self._drain()
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

    async def _stop(self, transport: asyncio.SubprocessTransport, process: _ServerProcess) -> None:
        """Close stdin, give the server a grace period, then end its process group."""
        if self._stdin is not None:
            self._outgoing.flush()
            with suppress(*_PIPE_ERRORS):
                self._stdin.close()
        with anyio.move_on_after(_STOP_GRACE_SECS):
            await process.exited.wait()
        if transport.get_returncode() is None:
            await _end_group(transport.get_pid(), process)
        # Its last stderr lines (why it ended) may still be in the pipe as it exits; a
        # child it left holding stderr open must not hold the stop up for long.
        with anyio.move_on_after(_STDERR_DRAIN_SECS):
            await process.stderr_closed.wait()

    def __repr__(self) -> str:
        return f"StdioPipe({self.name!r})"


def _text(path: str | os.PathLike[str] | None) -> str | None:
    return None if path is None else os.fspath(path)


def _backlog_size(line: bytes | _Oversized) -> int:
    return len(line) if isinstance(line, bytes) else _HEAD_BYTES


@dataclass(frozen=True, slots=True)
class _Oversized:
    """A line past ``max_message_bytes``: its head (to learn whose answer it was) and size."""

    head: bytes
    size: int


class _ServerProcess(asyncio.SubprocessProtocol):
    """The server process's pipes as callbacks: stdout's bytes go to the pipe as they arrive
    (no reader task to wake per line), stderr's to our stderr; writes wait while stdin is
    full."""

    def __init__(self, pipe: StdioPipe, errlog: TextIO) -> None:
        self._pipe = pipe
        self._errlog = errlog
        self._stderr_pending = b""
        self._transport: asyncio.SubprocessTransport | None = None
        self._writable: asyncio.Future[None] | None = None
        self.exited = asyncio.Event()
        self.stderr_closed = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.SubprocessTransport, transport)

    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._transport is not None else None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        assert isinstance(data, bytes)
        if fd == 1:
            self._pipe._received(data)
        elif fd == 2:
            self._stderr_pending = self._pipe._relay_stderr(self._stderr_pending, data, self._errlog)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._pipe._ended()
        elif fd == 2:
            if self._stderr_pending:
                self._pipe._stderr_line(self._stderr_pending, self._errlog)
                self._stderr_pending = b""
            self.stderr_closed.set()
        elif fd == 0:
            self.resume_writing()  # nobody waits on a pipe that is gone: writes fail instead

    def process_exited(self) -> None:
        self.exited.set()
        code = self._transport.get_returncode() if self._transport is not None else None
        self._pipe._note_exit(code)
        self._pipe._went("the server process exited" + (f" (status {code})" if code is not None else ""))

    def connection_lost(self, exc: Exception | None) -> None:
        self._pipe._ended()
        self.exited.set()
        self.stderr_closed.set()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        waiter, self._writable = self._writable, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def writable(self) -> None:
        if self._writable is not None:
            await asyncio.shield(self._writable)

    def pause_output(self) -> None:
        self._stdout().pause_reading()

    def resume_output(self) -> None:
        self._stdout().resume_reading()

    def _stdout(self) -> asyncio.ReadTransport:
        assert self._transport is not None
        return cast(asyncio.ReadTransport, self._transport.get_pipe_transport(1))


async def _end_group(pid: int, process: _ServerProcess) -> None:
    """SIGTERM the server's process group (it leads one: ``start_new_session``), SIGKILL
    it after the grace period, and wait for the leader to be reaped; then SIGKILL what is
    left of the group. A leader that obeys SIGTERM can leave members that do not: a
    sandbox ended mid set-up leaves bwrap's pid-namespace init waiting for its parent, and
    an init ignores every signal it has no handler for except SIGKILL."""
    try:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
            with anyio.move_on_after(_STOP_GRACE_SECS):
                await process.exited.wait()
                return
    finally:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
