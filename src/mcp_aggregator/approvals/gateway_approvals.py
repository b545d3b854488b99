"""``GatewayApprovals``: approvals as the gateway composes them (rules, store, desk, stage).

The store is open whenever the gateway runs (the admin API lists and decides held calls
even on a gateway without rules: an empty list); the stage is on the pipeline only when
there are rules, so a gateway without them pays nothing at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Final, Self

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus
from mcp_aggregator.approvals.approval_desk import ApprovalDesk, WallClock, _now
from mcp_aggregator.approvals.approval_notice import CHANNEL, decided_id
from mcp_aggregator.approvals.approval_rules import ApprovalRules
from mcp_aggregator.approvals.approval_stage import ApprovalStage
from mcp_aggregator.approvals.approval_store import ApprovalStore
from mcp_aggregator.approvals.config import ApprovalRule
from mcp_aggregator.audit.audit_entry import Outcome
from mcp_aggregator.audit.audit_trail import AuditTrail
from mcp_aggregator.catalog import Catalog
from mcp_aggregator.errors import RegistryError
from mcp_aggregator.identity.client_identity import ClientIdentity
from mcp_aggregator.registry import RegistrySettings
from mcp_aggregator.registry.change_feed import ChangeFeed
from mcp_aggregator.registry.heartbeat import Heartbeat
from mcp_aggregator.relay.caller import Caller
from mcp_aggregator.relay.pipeline import Invocation, Stage

logger = logging.getLogger(__name__)

FALLBACK_POLL_SECS: Final = 5.0
"""With the change feed, how often a replica still reads its held rows (a notice sent while
its listener was reconnecting is caught up at once; this is for one that was not)."""
_GIVEN: frozenset[str] = frozenset(("held", ApprovalStatus.APPROVED.value))


class ApprovalEvent(Exception):
    """One event of an approval as the audit trail stores it (never raised)."""


class GatewayApprovals:
    """See the module docstring. ``async with`` opens the store; ``start`` cancels what a
    previous run left pending; ``sweep_after`` settles, with a shared registry's heartbeats,
    what lost replicas held; ``stop`` refuses the calls held at shutdown."""

    def __init__(
        self,
        rules: Sequence[ApprovalRule],
        by_profile: Mapping[str, Sequence[ApprovalRule]],
        registry: RegistrySettings,
        *,
        catalog: Callable[[], Catalog],
        scrub: Callable[[str], str],
        audit: AuditTrail | None,
        page: Callable[[], str | None] = lambda: None,
        clock: WallClock = _now,
    ) -> None:
        self.rules = ApprovalRules(rules, by_profile)
        self.store = ApprovalStore(registry)
        self._schema = registry.pg_schema
        self._audit = audit
        self.desk = ApprovalDesk(self.store, clock=clock, note=self._note if audit is not None else None)
        self.stage = ApprovalStage(self.rules, self.desk, catalog, scrub, page=page)

    def stages(self) -> tuple[Stage, ...]:
        return (self.stage,) if self.rules else ()

    def covers(self, server: str, tool: str, profile: str) -> bool:
        """Whether a call of ``server``'s ``tool`` through ``profile`` may be held (the fast
        path sends such calls to the full pipeline)."""
        return self.rules.covers(server, tool, profile)

    async def __aenter__(self) -> Self:
        await self.store.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.store.__aexit__(exc_type, exc, tb)

    async def start(self, *, shared: bool) -> None:
        self.desk.shared = shared
        await self.desk.start()

    async def stop(self) -> None:
        await self.desk.stop()

    def follow(self, feed: ChangeFeed) -> None:
        """Hear through ``feed`` (before it runs) of decisions taken on other replicas; the
        desk's reading of its held rows becomes a slow fallback for a lost notice."""
        feed.follow(CHANNEL, self._heard)
        self.desk.poll_secs = FALLBACK_POLL_SECS

    def sweep_after(self, heartbeat: Heartbeat) -> None:
        """Settle, after each of ``heartbeat``'s beats, the calls that replicas lost held; and
        refuse decisions on them."""
        self.desk.lost_after = heartbeat.lost_after
        heartbeat.after_beat.append(self._sweep)

    async def _sweep(self) -> None:
        try:
            settled = await self.desk.sweep()
        except RegistryError as exc:
            logger.warning("approvals: cannot settle the calls of lost replicas: %s", exc)
            return
        if settled:
            logger.warning("approvals: settled %d held call(s) of lost replicas", settled)

    def _heard(self, payload: str | None) -> None:
        if payload is None:
            self.desk.nudge(None)
            return
        approval_id = decided_id(payload, self._schema)
        if approval_id is not None:
            self.desk.nudge(approval_id)

    def _note(self, approval: Approval, text: str) -> None:
        assert self._audit is not None
        event = text.partition(":")[0]
        caller = Caller(identity=ClientIdentity(name=approval.client, profile=approval.profile))
        invocation = Invocation(f"approvals/{event}", approval.server, approval.tool, caller)
        outcome = Outcome.OK if event in _GIVEN else Outcome.DENIED
        self._audit.writer.record(invocation, outcome, ApprovalEvent(text), 0.0)
