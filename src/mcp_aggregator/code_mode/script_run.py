"""``ScriptRun``: one script driven on a pydantic-monty worker, and the pool it runs on.

Imported by ``CodeSandbox`` when the first script comes, so that a gateway that runs none
never loads pydantic-monty.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import anyio
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncMonty,
    AsyncMontySession,
    AsyncSnapshot,
    CollectString,
    MontyComplete,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    ResourceLimits,
    SourceRange,
)

from mcp_aggregator.code_mode.config import CodeLimits, CodeModeSettings
from mcp_aggregator.code_mode.script_outcome import CALL_TOOL, ScriptOutcome, ToolCall, unawaited
from mcp_aggregator.code_mode.script_values import dumps, jsonable

_BACKSTOP_SECS: Final = 5.0
_CALLS_END_GRACE_SECS: Final = 5.0
"""How long a stopped script's cancelled tool calls get to unwind (their upstream requests end)."""


def new_pool(settings: CodeModeSettings) -> AsyncMonty:
    """The worker pool ``settings`` ask for, not yet entered."""
    return AsyncMonty(
        min_processes=1,
        max_processes=settings.workers,
        checkout_timeout=settings.queue_wait_secs,
        request_timeout=settings.limits.timeout_secs + _BACKSTOP_SECS,
    )


class _Stopped(Exception):
    """A limit the host enforces stopped the script (it cannot be caught inside)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class ScriptRun:
    """One script on one checked-out worker: drives it, counts its calls, shapes its end."""

    def __init__(self, code: str, limits: CodeLimits, call: ToolCall) -> None:
        self.code = code
        self.limits = limits
        self.call = call
        self.calls = 0
        self.printed = CollectString(max_bytes=limits.output_bytes)
        # The sandbox library runs each call_tool in a task of its own, which a script's end
        # (a timeout, an error, a value returned with calls still running) does not cancel.
        self._in_flight: set[asyncio.Task[Any]] = set()

    def monty_limits(self) -> ResourceLimits:
        limits = self.limits
        return {
            "max_feed_duration_secs": limits.cpu_secs,
            "max_memory": limits.memory_bytes,
            "max_recursion_depth": limits.recursion_depth,
            # Host round trips other than tool calls (future settling, sleeps) stay bounded too.
            "max_suspensions": 2 * limits.tool_calls + 100,
        }

    async def outcome(self, session: AsyncMontySession) -> ScriptOutcome:
        try:
            return await self._outcome(session)
        finally:
            await self._end_calls()

    async def _end_calls(self) -> None:
        """Cancel the script's tool calls still running and wait (bounded) until they end:
        a script that stopped must not go on acting through tools behind its caller's back."""
        running = [task for task in self._in_flight if not task.done()]
        for task in running:
            task.cancel()
        if running:
            with anyio.move_on_after(_CALLS_END_GRACE_SECS, shield=True):
                await asyncio.wait(running)

    async def _outcome(self, session: AsyncMontySession) -> ScriptOutcome:
        try:
            with anyio.fail_after(self.limits.timeout_secs):
                value = await self._drive(session)
        except TimeoutError:
            message = (
                f"TimeoutError: the script ran past {self.limits.timeout_secs:g} s "
                "(code_mode.limits.timeout_secs), tool calls included"
            )
            return self._failed(message, None)
        except _Stopped as exc:
            return self._failed(str(exc), exc.line)
        except MontyError as exc:
            message, line = describe(exc, self.limits)
            return self._failed(message, line)
        if unawaited(value):
            message = "TypeError: the value is a call_tool(...) never awaited; write `await call_tool(...)`"
            return self._failed(message, None)
        data = jsonable(value)
        size = len(dumps(data))
        if size > self.limits.result_chars:
            message = (
                f"ValueError: the script's value is {size} characters of JSON, over "
                f"code_mode.limits.result_chars = {self.limits.result_chars}; return less (a slice, a summary)"
            )
            return self._failed(message, None)
        return ScriptOutcome(ok=True, value=data, output=self.printed.output, calls=self.calls)

    def _failed(self, message: str, line: int | None) -> ScriptOutcome:
        return ScriptOutcome.failed(message, line=line, output=self.printed.output, calls=self.calls)

    async def _drive(self, session: AsyncMontySession) -> Any:
        snapshot = await session.feed_start(
            self.code, external_lookup={CALL_TOOL: self._call_tool}, print_callback=self.printed
        )
        while not isinstance(snapshot, MontyComplete):
            if isinstance(snapshot, AsyncFunctionSnapshot):
                if snapshot.is_os_function:
                    snapshot = await self._host_call(snapshot)
                    continue
                if snapshot.function_name == CALL_TOOL:
                    self.calls += 1
                    if self.calls > self.limits.tool_calls:
                        raise _Stopped(
                            f"RuntimeError: more than {self.limits.tool_calls} tool calls "
                            f"(code_mode.limits.tool_calls)",
                            self._line(snapshot.position),
                        )
            snapshot = await snapshot.resume_auto()
        return snapshot.output

    async def _host_call(self, snapshot: AsyncFunctionSnapshot) -> AsyncSnapshot:
        """Answer a call the sandbox makes to the host: sleep (here, within the script's wall
        clock) when it is a plain or directly awaited sleep; refuse everything else."""
        name = snapshot.function_name
        if name == "system.sleep" or (name == "system.async_sleep" and snapshot.allow_eager_await):
            seconds = snapshot.args[0] if snapshot.args else 0
            if not isinstance(seconds, int | float) or isinstance(seconds, bool):
                return await snapshot.resume({"exception": TypeError("sleep: seconds must be a number")})
            await anyio.sleep(max(0.0, float(seconds)))
            return await snapshot.resume({"return_value": None})
        error: Exception
        if name == "system.async_sleep":
            error = RuntimeError("asyncio.sleep: await it directly; code mode does not run sleeps concurrently")
        else:
            error = PermissionError(f"{name}: code mode has no filesystem, network or environment access")
        return await snapshot.resume({"exception": error})

    async def _call_tool(self, name: Any, arguments: Any = None) -> Any:
        if not isinstance(name, str):
            raise TypeError(f"call_tool: name must be a str, got {type(name).__name__}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise TypeError(f"call_tool: arguments must be a dict, got {type(arguments).__name__}")
        task = asyncio.current_task()
        if task is not None:
            self._in_flight.add(task)
        try:
            # Tuples, sets, bytes, dates: as JSON can carry them, the way they come back out.
            return await self.call(name, jsonable(arguments))
        finally:
            self._in_flight.discard(task)

    def _line(self, position: SourceRange) -> int | None:
        if not position.filename:
            return None
        return self.code.encode()[: position.start].count(b"\n") + 1


def describe(exc: MontyError, limits: CodeLimits) -> tuple[str, int | None]:
    """``(message, line)`` for an error the sandbox raised, naming the limit that stopped
    the script when one did. The line is the innermost frame of the script's traceback."""
    if isinstance(exc, MontyCrashedError):
        return f"the sandbox worker stopped ({exc}); it has been replaced, run the script again", None
    line = None
    if isinstance(exc, MontySyntaxError | MontyRuntimeError):
        frames = exc.traceback()
        if frames:
            line = frames[-1].line
        message = exc.display("type-msg")
    else:
        message = str(exc)
    return message + _limit_hint(message, limits), line


def _limit_hint(message: str, limits: CodeLimits) -> str:
    if message.startswith("TimeoutError: feed time limit"):
        return f" (code_mode.limits.cpu_secs = {limits.cpu_secs:g})"
    if message.startswith("MemoryError: memory limit exceeded"):
        if message.endswith(f"> {limits.output_bytes} bytes"):
            return f" (printed output over code_mode.limits.output_bytes = {limits.output_bytes})"
        return f" (code_mode.limits.memory_bytes = {limits.memory_bytes})"
    if message.startswith("RecursionError"):
        return f" (code_mode.limits.recursion_depth = {limits.recursion_depth})"
    if message.startswith("TypeError: 'coroutine' object"):
        return " (call_tool must be awaited: `await call_tool(name, {...})`)"
    if message.startswith("RuntimeError: suspension limit"):
        return f" (too many calls and waits; code_mode.limits.tool_calls = {limits.tool_calls})"
    return ""
