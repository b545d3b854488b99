"""``Heartbeat``: a replica on a shared registry says that it lives, and sees who does not.

``announce`` writes the replica's row before it holds anything another replica could have to
settle; ``run`` writes it again every ``registry.heartbeat_secs`` and then awaits each of
``after_beat`` (the approvals settle what lost replicas held there); ``stop`` deletes the row
and ends the beats, so a replica that stops cleanly is never taken for lost.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from enum import StrEnum
from types import TracebackType
from typing import Final, Self

import anyio
from anyio.abc import TaskStatus

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.registry.registry import utc_now
from mcp_aggregator.registry.replica_book import ReplicaBook, ReplicaSeen

logger = logging.getLogger(__name__)

WallClock = Callable[[], datetime]
AfterBeat = Callable[[], Awaitable[None]]

KEPT_FOR: Final = timedelta(days=1)
"""How long a lost replica's row stays listed (who died, and when) before a live one deletes it."""


class HeartbeatState(StrEnum):
    NEW = "new"
    OPEN = "open"
    STOPPED = "stopped"


class Heartbeat:
    """See the module docstring. ``async with`` opens its ``book``; it opens once."""

    def __init__(self, settings: RegistrySettings, replica: str, *, clock: WallClock = utc_now) -> None:
        self.book = ReplicaBook(settings)
        self.replica = replica
        self.home: str | None = None
        """Where other replicas reach this one; written with the next beat once known."""
        self.interval_secs = settings.heartbeat_secs
        self.lost_after = timedelta(seconds=settings.lost_after_secs)
        self.after_beat: list[AfterBeat] = []
        """Awaited in order after every beat of ``run``; one that raises is logged and skipped."""
        self._clock = clock
        self._started_at = clock()
        self._written = False
        # A beat under way when ``stop`` comes would make the row again after its deletion.
        self._writing = anyio.Lock()
        self.state = HeartbeatState.NEW

    async def __aenter__(self) -> Self:
        if self.state is not HeartbeatState.NEW:
            raise RuntimeError(f"a Heartbeat opens once; this one is {self.state.value}")
        await self.book.__aenter__()
        self.state = HeartbeatState.OPEN
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.state = HeartbeatState.STOPPED
        await self.book.__aexit__(exc_type, exc, tb)

    async def announce(self) -> None:
        """Write this replica's row now. Raises ``RegistryError``."""
        async with self._writing:
            if self.state is HeartbeatState.OPEN:
                await self.book.beat(ReplicaSeen(self.replica, self.home, self._started_at, self._clock()))
                self._written = True

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while self.state is HeartbeatState.OPEN:
            await anyio.sleep(self.interval_secs)
            try:
                await self.announce()
                await self.book.prune(self._clock() - max(KEPT_FOR, self.lost_after))
            except RegistryError as exc:
                # Unseen for long enough, the other replicas settle what this one holds: say so.
                logger.warning("heartbeat: cannot write that replica %s lives: %s", self.replica, exc)
            for after in self.after_beat:
                try:
                    await after()
                except Exception:
                    # A hook (settling lost replicas' calls) must not stop the heartbeat.
                    logger.exception("heartbeat: a task after the beat failed")

    async def stop(self) -> None:
        """End the beats and delete this replica's row (best effort: a replica that cannot is
        taken for lost later, which settles nothing it still holds, since it holds nothing)."""
        if self.state is not HeartbeatState.OPEN:
            return
        self.state = HeartbeatState.STOPPED
        try:
            async with self._writing:
                if self._written:
                    await self.book.remove(self.replica)
        except RegistryError as exc:
            logger.warning("heartbeat: cannot remove replica %s's row: %s", self.replica, exc)
