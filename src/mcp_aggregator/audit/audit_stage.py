"""``AuditStage``: the pipeline stage that records every call in the audit trail.

A ``WatchStage``: it changes nothing, so the fast path's callback-answered calls are
recorded through ``CallPipeline.settled`` without a coroutine per call. Either way the cost
on the call's path is a clock read, the outcome's classification and a list append.
"""

from __future__ import annotations

import time
from typing import Any

from mcp_aggregator.audit.audit_entry import outcome_of
from mcp_aggregator.audit.audit_writer import AuditWriter
from mcp_aggregator.caching.cache_stage import served_from_cache
from mcp_aggregator.relay.pipeline import Invocation, Next


class AuditStage:
    """Records each call's outcome (``ok``, ``error``, ``denied``), duration and whether the
    result cache answered it (``served_from_cache``) with ``writer``."""

    def __init__(self, writer: AuditWriter) -> None:
        self.writer = writer

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        started = time.perf_counter()
        token = served_from_cache.set(False)
        try:
            result = await send()
            cached = served_from_cache.get()
        except BaseException as exc:
            # Cancelled calls too: the client gave up, and the trail says so.
            self.writer.record(invocation, outcome_of(exc), exc, time.perf_counter() - started)
            raise
        finally:
            served_from_cache.reset(token)
        self.writer.record(invocation, outcome_of(result), None, time.perf_counter() - started, cached=cached)
        return result

    def on_settled(self, invocation: Invocation, outcome: object, started: float) -> None:
        error = outcome if isinstance(outcome, BaseException) else None
        self.writer.record(invocation, outcome_of(outcome), error, time.perf_counter() - started)
