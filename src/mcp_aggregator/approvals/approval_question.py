"""What the calling client is asked about a held call, and what its answer decides. Pure.

The question is a form elicitation: it names the tool, the server, the rule and the exact
arguments (as ``shown_arguments`` shows them: secrets masked), and asks for a yes/no
``approve`` and an optional ``reason``; a client that takes URL elicitation only is pointed at
the page's approval view instead (``page_question``), where the decision is an admin's. A
2025-11-25 client gets it as an
``elicitation/create`` request; a 2026-07-28 client as an input request of a multi-round-trip
``InputRequiredResult`` (the server's parked calls carry it), which the SDK client answers
with the same elicitation handler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

import mcp_types as types

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus

APPROVE: Final = "approve"
REASON: Final = "reason"
_MAX_SHOWN: Final = 4000


@dataclass(frozen=True, slots=True)
class ClientAnswer:
    """What a client's answer decided: ``status`` None when it decided nothing (dismissed,
    or it could not be asked): the call waits on for an admin where the rule lets one decide."""

    status: ApprovalStatus | None
    reason: str | None = None


def question(approval: Approval) -> types.ElicitRequest:
    shown = json.dumps(approval.arguments, indent=2, sort_keys=True, ensure_ascii=False)
    if len(shown) > _MAX_SHOWN:
        shown = shown[:_MAX_SHOWN] + "\n… (cut)"
    message = (
        f"Approve this tool call? (rule {approval.rule!r})\n"
        f"Tool: {approval.tool}\nServer: {approval.server}\nArguments:\n{shown}"
    )
    schema: types.ElicitRequestedSchema = {
        "type": "object",
        "properties": {
            APPROVE: {"type": "boolean", "title": "Approve this call", "default": False},
            REASON: {"type": "string", "title": "Reason (optional)"},
        },
        "required": [APPROVE],
    }
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def page_question(approval: Approval, page: str) -> types.ElicitRequest:
    """For a client that takes URL elicitation only: the page's approval view, where the person
    (signed in to the page) decides; ``page`` is the gateway's base URL."""
    message = f"Approve or deny this call of {approval.tool} on {approval.server} (rule {approval.rule!r}) on the page"
    url = f"{page.rstrip('/')}/#/approvals/{approval.id}"
    return types.ElicitRequest(
        params=types.ElicitRequestURLParams(message=message, url=url, elicitation_id=approval.id)
    )


def page_answer_of(answer: types.InputResponse | types.ErrorData) -> ClientAnswer:
    """What the answer to ``page_question`` decided: a refusal to open the page denies; opening
    it decides nothing (the decision comes from the page)."""
    if isinstance(answer, types.ElicitResult) and answer.action == "decline":
        return ClientAnswer(ApprovalStatus.DENIED, "declined by the client")
    return ClientAnswer(None)


def answer_of(answer: types.InputResponse | types.ErrorData) -> ClientAnswer:
    """The decision in the client's answer to ``question``."""
    if not isinstance(answer, types.ElicitResult):
        return ClientAnswer(None)
    content = answer.content or {}
    reason = content.get(REASON)
    reason = reason.strip() or None if isinstance(reason, str) else None
    if answer.action == "accept":
        if content.get(APPROVE) is True:
            return ClientAnswer(ApprovalStatus.APPROVED, reason)
        return ClientAnswer(ApprovalStatus.DENIED, reason or "denied by the client")
    if answer.action == "decline":
        return ClientAnswer(ApprovalStatus.DENIED, reason or "declined by the client")
    return ClientAnswer(None)
