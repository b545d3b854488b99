"""A raw call in flight on an upstream connection, as drain and the tool timeout see it.

Raw calls are the fast path; an anyio cancel scope per call costs several times these. A
call awaited by its task (``UpstreamConnection.call_raw``) is ended by cancelling that task;
a call answered by callback (``submit_raw``) settles its caller with the error and tells the
upstream side it is given up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_aggregator.errors import UpstreamError

if TYPE_CHECKING:
    from mcp_aggregator.upstreams.connection import UpstreamConnection

RawSettle = Callable[[bytes | UpstreamError], None]
"""Takes a raw call's outcome: the upstream's answer line, untouched, or the error that ended it."""


class AwaitedRawCall:
    """A raw call awaited by ``task``: drain and the timeout cancel the task."""

    __slots__ = ("cancelled", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.task.cancel()


class RawCall:
    """A raw call answered by callback, over a stdio pipe or a pooled HTTP connection.

    Tracked for drain and bounded by the tool timeout as any call is; ``withdraw`` is the
    caller giving up (the client cancelled or left), after which nothing is settled.
    """

    __slots__ = ("_connection", "_settle", "_timer", "_withdraw", "done", "what")

    def __init__(self, connection: UpstreamConnection, what: str, settle: RawSettle) -> None:
        self._connection = connection
        self._settle = settle
        self._timer: asyncio.TimerHandle | None = None
        self._withdraw: Callable[[], None] = _nothing
        """Tells the upstream side the call is given up (a cancellation, a closed exchange)."""
        self.what = what
        self.done = False

    def start(self, withdraw: Callable[[], None], limit: float) -> None:
        """The call went out: ``withdraw`` gives it up upstream; it times out after ``limit``."""
        self._withdraw = withdraw
        self._timer = asyncio.get_running_loop().call_later(limit, self.cancel)

    def answered(self, outcome: bytes | Exception) -> None:
        """From the upstream's reader: the answer or the error that ended the exchange."""
        if not self._finish():
            return
        if isinstance(outcome, bytes | UpstreamError):
            self._settle(outcome)
        else:
            self._settle(self._connection.closed_by(self.what, outcome))

    def cancel(self) -> None:
        """The timeout, or a drain aborting the call: it fails with the reason, and the
        upstream is told."""
        conn = self._connection
        error = conn.aborted_error(self, self.what, conn.config.tool_timeout_secs)
        if self._finish():
            self._withdraw()
            self._settle(error)

    def withdraw(self) -> None:
        if self._finish():
            self._withdraw()

    def _finish(self) -> bool:
        if self.done:
            return False
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
        self._connection.untrack(self)
        return True


def _nothing() -> None:
    pass
