"""``SeriesStage``: the pipeline stage that feeds the call series and the event stream.

A ``WatchStage`` like the audit's: it changes nothing, so the fast path's callback-answered
calls reach it through ``CallPipeline.settled`` without a coroutine per call. Per call it
costs a clock read, the outcome's classification, a few dict updates and, only while
someone watches the event stream, one event.
"""

from __future__ import annotations

import time
from typing import Any

from mcp_aggregator.audit.audit_entry import outcome_of
from mcp_aggregator.live.call_series import CallSeries
from mcp_aggregator.live.event_hub import EventHub
from mcp_aggregator.relay.pipeline import Invocation, Next

_TOOLS_CALL = "tools/call"


class SeriesStage:
    """Counts every relayed ``tools/call`` in ``series`` and tells ``events`` of it."""

    reads_caller = False
    """The fast path may hand it the route's shared ``Invocation``: a call's event then names
    its client only where another stage (the audit) makes an ``Invocation`` per call."""

    def __init__(self, series: CallSeries, events: EventHub) -> None:
        self.series = series
        self.events = events

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        if invocation.method != _TOOLS_CALL:
            return await send()
        started = time.perf_counter()
        try:
            result = await send()
        except BaseException as exc:
            self._settle(invocation, exc, started)
            raise
        self._settle(invocation, result, started)
        return result

    def on_settled(self, invocation: Invocation, outcome: object, started: float) -> None:
        if invocation.method == _TOOLS_CALL:
            self._settle(invocation, outcome, started)

    def _settle(self, invocation: Invocation, outcome: object, started: float) -> None:
        ms = (time.perf_counter() - started) * 1000.0
        result = outcome_of(outcome)
        self.series.record(invocation.server, invocation.target, result, ms)
        if self.events.watched:
            self.events.publish(
                "call",
                {
                    "server": invocation.server,
                    "tool": invocation.target,
                    "outcome": result.value,
                    "ms": round(ms, 3),
                    "client": invocation.caller.identity.name,
                    "profile": invocation.caller.identity.profile,
                },
            )
