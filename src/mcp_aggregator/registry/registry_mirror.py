"""Write-behind of live state into the registry, in order, off the hot path.

Supervisors change state inside the event loop's callbacks and must not wait on the
database; the mirror applies their writes one at a time in the order they happened,
so the stored state machine replays exactly what the live one did.

A write may name the server it is about (``key``). Writes of one key keep their order;
writes of different keys are independent, which lets ``flush(key)`` bring one server's
writes forward: an answer that needs one server's stored tools waits for those, not for a
start's thousands of tools of every other server queued before them. A write without a key
(the classifications of a batch of tools) must not depend on its place among keyed ones:
classifications of tools not stored yet are queued again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.abc import TaskStatus
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import AggregatorError

logger = logging.getLogger(__name__)

Write = Callable[[], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class _Queued:
    what: str
    item: Write | anyio.Event
    """A write, or the event of a flush: set when the writes before it are applied."""
    key: str | None


class RegistryMirror:
    """An ordered queue of registry writes drained by one task."""

    def __init__(self) -> None:
        self._queue: deque[_Queued] = deque()
        self._woken = anyio.Event()
        self._closed = False

    def submit(self, what: str, write: Write, key: str | None = None) -> None:
        """Queue ``write``; ``key``: the id of the server it is about, if it is about one."""
        if self._closed:
            logger.debug("registry write %r after shutdown dropped", what)
            return
        self._queue.append(_Queued(what, write, key))
        self._woken.set()

    def close(self) -> None:
        """Drop what is queued; flushes waiting (and any later) return."""
        self._closed = True
        self._release()

    async def flush(self, key: str | None = None) -> None:
        """Return once every write submitted before this call has been applied; with ``key``,
        every write of that key, moved to the front in their order (the write being applied,
        of any key, is finished first).

        Returns at once when the writer has ended (the gateway is being cancelled as a
        whole): nothing could be applied any more, and raising here would break the stop.
        """
        if self._closed:
            return
        done = anyio.Event()
        if key is None:
            self._queue.append(_Queued("flush", done, None))
        else:
            ahead = [queued for queued in self._queue if queued.key == key]
            behind = [queued for queued in self._queue if queued.key != key]
            self._queue = deque([*ahead, _Queued("flush", done, key), *behind])
        self._woken.set()
        await done.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            while not self._closed:
                if not self._queue:
                    await self._woken.wait()
                    self._woken = anyio.Event()
                    continue
                queued = self._queue.popleft()
                if isinstance(queued.item, anyio.Event):
                    queued.item.set()
                    continue
                try:
                    await queued.item()
                except (AggregatorError, SQLAlchemyError) as exc:
                    # The live state stays authoritative; a failed mirror write is logged, not fatal.
                    logger.warning("registry write %r failed: %s", queued.what, exc)
        finally:
            self._closed = True
            self._release()

    def _release(self) -> None:
        for queued in self._queue:
            if isinstance(queued.item, anyio.Event):
                queued.item.set()
        self._queue.clear()
        self._woken.set()
