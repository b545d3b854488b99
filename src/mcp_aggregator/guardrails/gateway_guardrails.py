"""The guardrails as one gateway runs them: the rules, their stage on the call path, their
screen on tool definitions, the webhook client, and the audit of every decision."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from mcp_aggregator.audit.audit_entry import Outcome
from mcp_aggregator.audit.audit_trail import AuditTrail
from mcp_aggregator.guardrails.config import GuardAction, GuardPlace
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.description_screen import DescriptionScreen
from mcp_aggregator.guardrails.guard import Guard
from mcp_aggregator.guardrails.guard_stage import GuardStage
from mcp_aggregator.guardrails.webhook_stage import WebhookStage
from mcp_aggregator.relay import NO_CALLER, Invocation, Stage


class GatewayGuardrails:
    """``guard`` (``guardrails:`` and the profiles' own) wired to ``audit`` (None: not audited)."""

    def __init__(
        self,
        guard: Guard,
        audit: AuditTrail | None,
        on_findings: Callable[[Invocation, Sequence[Decision]], None] | None = None,
    ) -> None:
        self.guard = guard
        self._audit = audit
        self._on_findings = on_findings
        """Told of every decision on a call or a definition (the live series and event stream)."""
        self.webhooks = httpx.AsyncClient() if guard.hooked else None
        """Shared by every webhook rule; None when no rule is a webhook."""
        self.descriptions = (
            DescriptionScreen(guard, self._listing_judged) if guard.watches(GuardPlace.DESCRIPTIONS) else None
        )
        """The guardrails on tool definitions; None when no rule judges them."""

    def stages(self) -> tuple[Stage, ...]:
        """The stage on the call path; none when no rule judges arguments or results."""
        guard = self.guard
        if not (guard.watches(GuardPlace.ARGUMENTS) or guard.watches(GuardPlace.RESULTS)):
            return ()
        watched = self._audit is not None or self._on_findings is not None
        local = GuardStage(guard, self._call_judged if watched else None)
        return (local,) if self.webhooks is None else (WebhookStage(local, self.webhooks),)

    def hold_reasons(self, server: str, definition: Mapping[str, Any]) -> list[str]:
        """Why a rule holds a tool with this pending definition (empty: none does)."""
        return [] if self.descriptions is None else self.descriptions.reasons(server, definition)

    async def aclose(self) -> None:
        if self.webhooks is not None:
            await self.webhooks.aclose()

    def _call_judged(self, invocation: Invocation, decisions: Sequence[Decision]) -> None:
        if self._on_findings is not None:
            self._on_findings(invocation, decisions)
        if self._audit is not None:
            self._audit.writer.note(invocation, [decision.to_json() for decision in decisions])

    def _listing_judged(self, server: str, tool: str, decisions: Sequence[Decision]) -> None:
        """A tool's definition judged at its first listing: audited as a ``tools/list`` of it
        (``denied`` when held)."""
        invocation = Invocation("tools/list", server, tool, NO_CALLER)
        if self._on_findings is not None:
            self._on_findings(invocation, decisions)
        if self._audit is None:
            return
        held = any(decision.action is GuardAction.BLOCK for decision in decisions)
        self._audit.writer.note(invocation, [decision.to_json() for decision in decisions])
        self._audit.writer.record(invocation, Outcome.DENIED if held else Outcome.OK, None, 0.0)
