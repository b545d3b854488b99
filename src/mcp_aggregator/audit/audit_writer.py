"""``AuditWriter``: takes audit records on the hot path for nothing but an append, and
writes them to the ``AuditLog`` in batches from a task of the gateway's task group.

A call never waits for the database: ``record`` appends to an in-memory queue bounded by
``audit.queue_size``; when it is full the record is dropped and counted (``dropped``), and
the loss is logged once per batch. Everything derived from a call (the client, the digest
of its arguments, scrubbed values and error texts) is worked out by the writer, off the
call's path. Entries older than ``audit.retention_days`` are purged periodically.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import anyio.abc

from mcp_aggregator.audit.audit_entry import (
    AuditEntry,
    Outcome,
    Scrub,
    arguments_digest,
    error_text,
    scrubbed_arguments,
    storable,
)
from mcp_aggregator.audit.audit_log import AuditLog
from mcp_aggregator.audit.config import AuditSettings
from mcp_aggregator.errors import RegistryError
from mcp_aggregator.relay.pipeline import Invocation

logger = logging.getLogger(__name__)

WallClock = Callable[[], float]
"""Seconds since the epoch (``time.time``): when a call was made."""

_Pending = tuple[float, Invocation, Outcome, BaseException | None, float, tuple[dict[str, Any], ...] | None, bool]

_MAX_NOTED = 10_000
"""Calls with guardrail notes waiting for their record: a bound, should a call never be recorded."""


WRITE_GRACE_SECS = 10.0
"""How long one batch's write may take, and so hold a stop. Writes and purges are shielded from
cancellation: a database call cancelled half-way through connecting leaves the driver's clean-up
task running past the event loop's end, and a cancelled write loses its batch. Bounded, so that
a database that stopped answering cannot hold the stop for ever."""

PURGE_GRACE_SECS = 60.0
"""The same bound for a purge: one DELETE, which a large first purge needs time for."""


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class AuditWriter:
    """See the module docstring. ``run`` and ``run_purge`` are started with ``tg.start``."""

    def __init__(
        self,
        settings: AuditSettings,
        log: AuditLog,
        *,
        scrub: Scrub = lambda text: text,
        clock: WallClock = time.time,
    ) -> None:
        self._settings = settings
        self._log = log
        self._scrub = scrub
        self.clock = clock
        self._pending: list[_Pending] = []
        self._wake = anyio.Event()
        self._urgent = anyio.Event()
        self._progress = anyio.Event()
        self.submitted = 0
        """Records taken (dropped ones not counted)."""
        self.written = 0
        """Records handled by the writer (stored, or lost to a database error)."""
        self.dropped = 0
        """Records dropped because the queue was full."""
        self.failed = 0
        """Records the database refused (their batch is logged and given up)."""
        self._reported_drops = 0
        self._notes: dict[int, list[dict[str, Any]]] = {}

    def note(self, invocation: Invocation, decisions: list[dict[str, Any]]) -> None:
        """Attach guardrail decisions to the call ``invocation`` (its record, made later, carries
        them). Keyed by the invocation's identity: every audited call has its own."""
        if len(self._notes) >= _MAX_NOTED:
            self._notes.clear()
        self._notes.setdefault(id(invocation), []).extend(decisions)

    def record(
        self,
        invocation: Invocation,
        outcome: Outcome,
        error: BaseException | None,
        duration: float,
        *,
        cached: bool = False,
    ) -> None:
        """Queue one call's record (``duration`` in seconds; ``cached``: the result cache
        answered it); never blocks, never raises."""
        pending = self._pending
        notes = self._notes.pop(id(invocation), None) if self._notes else None
        if len(pending) >= self._settings.queue_size:
            self.dropped += 1
            return
        pending.append((self.clock(), invocation, outcome, error, duration, tuple(notes) if notes else None, cached))
        self.submitted += 1
        if len(pending) == 1:
            self._wake.set()
        elif len(pending) >= self._settings.batch_size:
            self._urgent.set()

    async def flush(self) -> None:
        """Wait until every record taken so far has been handled by the writer (``run`` must be running)."""
        target = self.submitted
        while self.written < target:
            self._urgent.set()
            self._wake.set()
            await self._progress.wait()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Write queued records in batches: at the latest ``flush_interval_secs`` after the
        first of them came, sooner when a batch is full or ``flush`` asks."""
        task_status.started()
        while True:
            await self._wake.wait()
            with anyio.move_on_after(self._settings.flush_interval_secs):
                await self._urgent.wait()
            await self.write_pending()

    async def write_pending(self) -> None:
        """Write everything queued now, in batches of ``batch_size``."""
        self._wake, self._urgent = anyio.Event(), anyio.Event()
        taken, self._pending = self._pending, []
        if self.dropped != self._reported_drops:
            logger.warning("audit: %d records dropped, the queue was full", self.dropped - self._reported_drops)
            self._reported_drops = self.dropped
        size = self._settings.batch_size
        for start in range(0, len(taken), size):
            batch = taken[start : start + size]
            try:
                with anyio.move_on_after(WRITE_GRACE_SECS, shield=True) as scope:
                    await self._log.insert(self._entries(batch))
                if scope.cancelled_caught:
                    raise RegistryError(f"the database did not answer within {WRITE_GRACE_SECS:g} s")
            except RegistryError as exc:
                self.failed += len(batch)
                logger.error("audit: %d records lost: %s", len(batch), self._scrub(str(exc))[:500])
            self.written += len(batch)
        progress, self._progress = self._progress, anyio.Event()
        progress.set()

    async def purge_once(self) -> int:
        """Remove the entries older than ``retention_days`` (by ``clock``); how many went."""
        cutoff = _utc(self.clock()) - timedelta(days=self._settings.retention_days)
        with anyio.move_on_after(PURGE_GRACE_SECS, shield=True) as scope:
            removed = await self._log.purge(cutoff)
        if scope.cancelled_caught:
            raise RegistryError(f"the database did not purge within {PURGE_GRACE_SECS:g} s")
        if removed:
            logger.info("audit: %d entries older than %s removed", removed, cutoff.isoformat())
        return removed

    async def run_purge(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Purge at start, then every ``purge_interval_secs``; a database error is logged and retried next time."""
        task_status.started()
        while True:
            try:
                await self.purge_once()
            except RegistryError as exc:
                logger.error("audit: purge failed: %s", self._scrub(str(exc))[:500])
            await anyio.sleep(self._settings.purge_interval_secs)

    def _entries(self, batch: list[_Pending]) -> list[AuditEntry]:
        entries = []
        for item in batch:
            try:
                entries.append(self._entry(item))
            except Exception:
                # A guard, not a policy: one record the rules cannot make must not stop the writer.
                self.failed += 1
                logger.exception("audit: a record of %s %s could not be made", item[1].method, item[1].target)
        return entries

    def _entry(self, item: _Pending) -> AuditEntry:
        at, invocation, outcome, error, duration, guardrails, cached = item
        identity = invocation.caller.identity
        arguments = invocation.arguments
        kept = None
        if self._settings.include_arguments and arguments is not None:
            kept = scrubbed_arguments(arguments, self._scrub)
        caller = invocation.caller
        return AuditEntry(
            time=_utc(at),
            client=identity.name if identity.name is not None else invocation.caller.origin,
            profile=identity.profile,
            method=invocation.method,
            server=invocation.server,
            tool=invocation.target,
            outcome=outcome,
            duration_ms=duration * 1000,
            arguments_digest=arguments_digest(arguments),
            arguments=kept,
            error=error_text(error, self._scrub) if error is not None else None,
            request_id=None if caller.http_request_id is None else caller.http_request_id[:128],
            jsonrpc_id=None if caller.request_id is None else storable(str(caller.request_id))[:255],
            guardrails=guardrails,
            cached=cached,
        )
