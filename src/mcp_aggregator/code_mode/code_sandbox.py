"""``CodeSandbox``: runs model-written scripts in pydantic-monty worker processes.

A script runs in a worker subprocess of a pool (no filesystem, network, subprocess or
environment; the host answers every such call with ``PermissionError``). Its only way out
is ``call_tool(name, arguments)``, a host function the caller supplies. The pool starts at
the first script, so a gateway that never runs one spawns nothing, and closes when the
sandbox's task is cancelled. A worker that dies (killed, a crash, a limit's backstop) is
replaced by the pool; the script that ran on it gets an error result, nothing else does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncMonty,
    AsyncMontySession,
    AsyncSnapshot,
    CollectString,
    MontyComplete,
    MontyError,
    ResourceLimits,
    SourceRange,
)

from mcp_aggregator.code_mode.config import CodeLimits, CodeModeSettings
from mcp_aggregator.code_mode.script_check import check_script
from mcp_aggregator.code_mode.script_outcome import ScriptOutcome, describe, unawaited
from mcp_aggregator.code_mode.script_values import dumps, jsonable
from mcp_aggregator.errors import CodeModeError

logger = logging.getLogger(__name__)

CALL_TOOL: Final = "call_tool"
ToolCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``(name, arguments) -> value`` for the script; raises a builtin exception the script may catch."""

_SETTLE_SECS: Final = 0.05
"""After the pool closes, its runtime threads may still post one wake-up to the event loop;
an interpreter that exits in that instant aborts (CPython 3.11). A moment's wait avoids it.
There is no event to wait on instead: the runtime's threads are process-wide and outlive
the pool, and waiting for the workers' exit (a pidfd) still left 3 aborts in 40 exits."""
_BACKSTOP_SECS: Final = 5.0
_CALLS_END_GRACE_SECS: Final = 5.0
"""How long a stopped script's cancelled tool calls get to unwind (their upstream requests end)."""


class _Stopped(Exception):
    """A limit the host enforces stopped the script (it cannot be caught inside)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class CodeSandbox:
    """Runs scripts under ``code_mode`` settings; start ``run`` in a task group first."""

    def __init__(self, settings: CodeModeSettings) -> None:
        self.settings = settings
        self._wanted = anyio.Event()
        self._ready = anyio.Event()
        self._pool: AsyncMonty | None = None
        self._failure: str | None = None
        self._running = False

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the worker pool: start it at the first script, close it when cancelled."""
        self._running = True
        task_status.started()
        try:
            await self._wanted.wait()
            limits = self.settings.limits
            pool = AsyncMonty(
                min_processes=1,
                max_processes=self.settings.workers,
                checkout_timeout=self.settings.queue_wait_secs,
                request_timeout=limits.timeout_secs + _BACKSTOP_SECS,
            )
            try:
                await pool.__aenter__()
            except Exception as exc:
                # Top-level guard of this task: a sandbox that cannot start (no worker binary,
                # no processes left) refuses scripts; it must not take the gateway down.
                self._failure = f"the sandbox could not start: {exc}"
                logger.error("%s", self._failure)
                self._ready.set()
                await anyio.sleep_forever()
            self._pool = pool
            self._ready.set()
            try:
                await anyio.sleep_forever()
            finally:
                self._pool = None
                with anyio.CancelScope(shield=True):
                    await pool.__aexit__(None, None, None)
                    await anyio.sleep(_SETTLE_SECS)
        finally:
            self._running = False

    async def run_script(self, code: str, call: ToolCall) -> ScriptOutcome:
        """Run ``code``; every failure of the script is an outcome, never an exception.

        Raises:
            CodeModeError: the sandbox is not running or could not start.
        """
        problem = check_script(code, self.settings.allowed_modules)
        if problem is not None:
            return ScriptOutcome.failed(problem.message, line=problem.line)
        pool = await self._started_pool()
        run = _ScriptRun(code, self.settings.limits, call)
        try:
            async with pool.checkout(limits=run.monty_limits()) as session:
                return await run.outcome(session)
        except TimeoutError:  # only the checkout's: the run turns its own timeouts into outcomes
            wait = self.settings.queue_wait_secs
            return ScriptOutcome.failed(
                f"SandboxBusy: every sandbox worker stayed busy for {wait:g} s "
                f"(code_mode.workers = {self.settings.workers}); try again"
            )

    async def _started_pool(self) -> AsyncMonty:
        if not self._running:
            raise CodeModeError("the code sandbox is not running")
        self._wanted.set()
        with anyio.fail_after(max(self.settings.queue_wait_secs, 30.0)):
            await self._ready.wait()
        if self._pool is None:
            raise CodeModeError(self._failure or "the code sandbox stopped")
        return self._pool


class _ScriptRun:
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
