"""``AuditTrail``: the audit's parts as the gateway composes them (store, writer, stage)."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup

from mcp_aggregator.audit.audit_entry import Scrub
from mcp_aggregator.audit.audit_log import AuditLog
from mcp_aggregator.audit.audit_stage import AuditStage
from mcp_aggregator.audit.audit_writer import AuditWriter, WallClock
from mcp_aggregator.audit.config import AuditSettings
from mcp_aggregator.registry import RegistrySettings

_FLUSH_GRACE_SECS = 10.0


class AuditTrail:
    """``async with`` opens the store (after the registry migrated it); ``start`` runs the
    writer and the purge in the gateway's task group; leaving writes what is queued."""

    def __init__(
        self,
        settings: AuditSettings,
        registry: RegistrySettings,
        *,
        scrub: Scrub,
        clock: WallClock = time.time,
    ) -> None:
        self.settings = settings
        self.log = AuditLog(registry)
        self.writer = AuditWriter(settings, self.log, scrub=scrub, clock=clock)
        self.stage = AuditStage(self.writer)
        self._running = False

    async def __aenter__(self) -> Self:
        await self.log.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._running:
                with anyio.move_on_after(_FLUSH_GRACE_SECS, shield=True):
                    await self.writer.write_pending()
        finally:
            await self.log.__aexit__(exc_type, exc, tb)

    async def start(self, tg: TaskGroup) -> None:
        await tg.start(self.writer.run)
        await tg.start(self.writer.run_purge)
        self._running = True

    async def flush(self) -> None:
        """Wait until every call recorded so far is stored."""
        await self.writer.flush()
