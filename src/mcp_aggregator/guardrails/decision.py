"""``Decision``: what one rule did with one call, result or description — as the audit, the
metrics and an error result tell it (the rule, its action and kind, where; never the value)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_aggregator.guardrails.config import GuardAction, GuardKind, GuardPlace


@dataclass(frozen=True, slots=True)
class Decision:
    rule: str
    action: GuardAction
    kind: GuardKind
    where: GuardPlace
    found: tuple[str, ...]
    """The labels of the findings (``aws_access_key``, ``EMAIL_ADDRESS``...), or the webhook's verdict."""
    reasons: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "action": self.action.value,
            "kind": self.kind.value,
            "where": self.where.value,
            "found": list(self.found),
        }

    @property
    def explanation(self) -> str:
        """What a blocked caller or a holding admin reads."""
        place = {GuardPlace.RESULTS: "result", GuardPlace.ARGUMENTS: "arguments", GuardPlace.DESCRIPTIONS: "definition"}
        text = f"guardrail {self.rule!r} ({self.kind.value}) found {', '.join(self.found)} in the {place[self.where]}"
        if self.reasons:
            text += ": " + "; ".join(self.reasons)
        return text
