"""``Approval``: one held call as the desk, the store and the REST API see it; the pure
rules that bind it to its call (``approval_digest``) and show its arguments (``shown_arguments``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import orjson

from mcp_aggregator.guardrails.finding import masked
from mcp_aggregator.guardrails.json_text import rewritten
from mcp_aggregator.guardrails.secret_detector import SecretDetector


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    """The call ended before a decision: its client gave up, or the gateway that held it stopped."""


class DecidedVia(StrEnum):
    """How a decision was given."""

    CLIENT = "client"
    """The calling client, through elicitation (or a 2026-07-28 input request)."""
    REST = "rest"
    CLI = "cli"
    PAGE = "page"
    GATEWAY = "gateway"
    """No person: the wait timed out, or the gateway stopped."""


@dataclass(frozen=True, slots=True)
class Approval:
    """One held call. ``arguments`` are as shown to people (secrets masked); ``digest`` binds
    the decision to the exact call (see ``approval_digest``)."""

    id: str
    rule: str
    client: str | None
    profile: str
    server: str
    tool: str
    arguments: Any
    digest: str
    status: ApprovalStatus
    created_at: datetime
    expires_at: datetime
    ask: str
    replica: str
    """The gateway process that holds the call (only it can release it)."""
    decided_at: datetime | None = None
    decided_by: str | None = None
    via: DecidedVia | None = None
    reason: str | None = None

    def decided(
        self, status: ApprovalStatus, at: datetime, by: str | None, via: DecidedVia, reason: str | None
    ) -> Approval:
        return replace(self, status=status, decided_at=at, decided_by=by, via=via, reason=reason)

    def to_json(self) -> dict[str, Any]:
        """The REST API's shape (the page codes against these names)."""
        return {
            "id": self.id,
            "rule": self.rule,
            "client": self.client,
            "profile": self.profile,
            "server": self.server,
            "tool": self.tool,
            "arguments": self.arguments,
            "digest": self.digest,
            "status": self.status.value,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "decided_by": self.decided_by,
            "reason": self.reason,
            "decided_at": self.decided_at.isoformat() if self.decided_at is not None else None,
            "via": self.via.value if self.via is not None else None,
            "ask": self.ask,
        }


def approval_digest(
    client: str | None,
    profile: str,
    server: str,
    tool: str,
    definition: str | None,
    arguments: Mapping[str, Any] | None,
) -> str:
    """SHA-256 over the canonical JSON of (client, profile, server, tool, the tool's pinned
    definition fingerprint, the exact arguments): a changed argument, another client or a
    changed definition is another call, needing its own approval."""
    data = orjson.dumps(
        [client, profile, server, tool, definition, dict(arguments or {})],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    return hashlib.sha256(data).hexdigest()


_SECRETS: Final = SecretDetector()


def shown_arguments(arguments: Mapping[str, Any] | None, scrub: Callable[[str], str]) -> Any:
    """The arguments as a person is shown them: secrets masked the way the guardrails mask
    them (``[REDACTED:<label>]``), and every configured server secret as ``***`` (``scrub``)."""

    def mask(text: str) -> str | None:
        out = scrub(masked(text, _SECRETS.find(text)))
        return None if out == text else out

    return rewritten(dict(arguments or {}), mask)
