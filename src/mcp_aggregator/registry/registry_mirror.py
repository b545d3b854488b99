"""Write-behind of live state into the registry, in order, off the hot path.

Supervisors change state inside the event loop's callbacks and must not wait on the
database; the mirror applies their writes one at a time in the order they happened,
so the stored state machine replays exactly what the live one did.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import AggregatorError

logger = logging.getLogger(__name__)

Write = Callable[[], Awaitable[object]]


class RegistryMirror:
    """An ordered queue of registry writes drained by one task."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[tuple[str, Write | anyio.Event]](
            max_buffer_size=math.inf
        )

    def submit(self, what: str, write: Write) -> None:
        try:
            self._send.send_nowait((what, write))
        except anyio.ClosedResourceError:
            logger.debug("registry write %r after shutdown dropped", what)

    def close(self) -> None:
        self._send.close()
        self._receive.close()

    async def flush(self) -> None:
        """Return once every write submitted before this call has been applied."""
        done = anyio.Event()
        try:
            self._send.send_nowait(("flush", done))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The writer has ended (the gateway is being cancelled as a whole): nothing
            # submitted can be applied any more, and raising here would break the stop.
            return
        await done.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async with self._receive:
            async for what, item in self._receive:
                if isinstance(item, anyio.Event):
                    item.set()
                    continue
                try:
                    await item()
                except (AggregatorError, SQLAlchemyError) as exc:
                    # The live state stays authoritative; a failed mirror write is logged, not fatal.
                    logger.warning("registry write %r failed: %s", what, exc)
