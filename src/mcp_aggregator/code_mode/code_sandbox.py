"""``CodeSandbox``: runs model-written scripts in pydantic-monty worker processes.

A script runs in a worker subprocess of a pool (no filesystem, network, subprocess or
environment; the host answers every such call with ``PermissionError``). Its only way out
is ``call_tool(name, arguments)``, a host function the caller supplies. The pool starts at
the first script, so a gateway that never runs one spawns nothing, and closes when the
sandbox's task is cancelled. A worker that dies (killed, a crash, a limit's backstop) is
replaced by the pool; the script that ran on it gets an error result, nothing else does.
pydantic-monty itself (``script_run``) is imported with the first script too: every gateway
builds a sandbox, few run code.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import anyio

from mcp_aggregator.code_mode.config import CodeModeSettings
from mcp_aggregator.code_mode.script_check import check_script
from mcp_aggregator.code_mode.script_outcome import ScriptOutcome, ToolCall
from mcp_aggregator.errors import CodeModeError

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty

logger = logging.getLogger(__name__)

_SETTLE_SECS: Final = 0.05
"""After the pool closes, its runtime threads may still post one wake-up to the event loop;
an interpreter that exits in that instant aborts (CPython 3.11). A moment's wait avoids it.
There is no event to wait on instead: the runtime's threads are process-wide and outlive
the pool, and waiting for the workers' exit (a pidfd) still left 3 aborts in 40 exits."""


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
            # Here, not at the top: pydantic-monty costs every start ~3 MB that only code mode uses.
            from mcp_aggregator.code_mode.script_run import new_pool

            pool = new_pool(self.settings)
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
        from mcp_aggregator.code_mode.script_run import ScriptRun  # loaded by _started_pool

        run = ScriptRun(code, self.settings.limits, call)
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
